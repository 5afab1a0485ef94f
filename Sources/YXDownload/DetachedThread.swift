#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A POSIX thread that runs one closure and ends, with nobody to join it.
///
/// `Foundation.Thread` would do the same, but it belongs to swift-corelibs-foundation, and one call of
/// it links all of that (with CoreFoundation and ICU's data) into the static `yxdownload`: 93 MB instead
/// of 44 MB, whose relocations, page faults and conformance records each start of the command paid for
/// (see `FoundationUseTests`). The transfer lanes and libcurl's set-up start their threads here.
///
/// ```swift
/// guard DetachedThread.start({ work() }) else { reportThatNothingRuns() }
/// ```
enum DetachedThread {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Runs `body` on a new thread. Returns false when the system could make no thread (`body` then
    /// never runs).
    static func start(_ body: @escaping @Sendable () -> Void) -> Bool {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t?
        let made = pthread_create(&thread, nil, { context in
            Unmanaged<Body>.fromOpaque(context).takeRetainedValue().run()
            return nil
        }, context)
        guard made == 0, let thread else {
            Unmanaged<Body>.fromOpaque(context).release()
            return false
        }
        #else
        var thread = pthread_t()
        let made = pthread_create(&thread, nil, { context in
            if let context { Unmanaged<Body>.fromOpaque(context).takeRetainedValue().run() }
            return nil
        }, context)
        guard made == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            return false
        }
        #endif
        pthread_detach(thread)
        return true
    }
}
