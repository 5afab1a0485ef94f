import Dispatch
import Foundation
@_spi(YXQueueInternals) import YXQueue

/// SIGINT, SIGTERM and SIGHUP for the whole process: taken from their default action once, and handed
/// to whoever asked for them last (``route(to:)``).
///
/// SIGHUP (the terminal went away: an SSH session ended, a window closed) stops a run or a worker as
/// SIGTERM does, so that downloads keep their `.part` files and a worker gives its jobs back at once
/// instead of holding them until their leases run out.
///
/// SIGINT and SIGHUP that were ignored when the program started stay ignored, as Unix programs have
/// always done: a shell without job control starts a script's background commands (`yxdownload … &`)
/// with SIGINT ignored, so that a Ctrl-C meant for the command in the foreground does not stop them,
/// and `nohup yxdownload …` ignores SIGHUP. SIGTERM is always taken: it is how a service manager or an
/// orchestrator stops a worker.
///
/// The dispatch sources that receive the signals live as long as the process. A source that is
/// released or cancelled has its end processed on a pool thread, which libdispatch starts for it
/// as the process exits: in a run of one small file that thread was a measurable part of the time.
package enum InterruptSignals {
    private static let handler = Locked<(@Sendable (Int32) -> Void)?>(nil)

    private final class Sources: @unchecked Sendable {
        // Set once in `init` and never changed; the sources themselves are thread-safe.
        let sources: [any DispatchSourceSignal]

        init() {
            sources = InterruptSignals.numbers.map { number in
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number)
                source.setEventHandler { InterruptSignals.handler.withLock { $0 }?(number) }
                source.resume()
                return source
            }
        }
    }

    private static let installed = Sources()

    /// The signals routed: SIGTERM, and SIGINT and SIGHUP unless they were ignored at start (see above).
    /// Settled once, before any of them is taken from its default action.
    package static let numbers: [Int32] = [SIGINT, SIGTERM, SIGHUP].filter { $0 == SIGTERM || !isIgnored($0) }

    /// Whether signal `number` is ignored now, read without changing it (`signal` would set it for a
    /// moment).
    private static func isIgnored(_ number: Int32) -> Bool {
        var current = sigaction()
        guard sigaction(number, nil, &current) == 0 else { return false }
        #if canImport(Darwin)
        let handler = current.__sigaction_u.__sa_handler
        #else
        let handler = current.__sigaction_handler.sa_handler
        #endif
        // A handler is a C function pointer, compared by its address (SIG_DFL is null, SIG_IGN is 1).
        func address(_ handler: (@convention(c) (Int32) -> Void)?) -> Int {
            handler.map { unsafeBitCast($0, to: Int.self) } ?? 0
        }
        return address(handler) == address(SIG_IGN)
    }

    /// Whether a signal that comes after a first one ends what the first began at once. A SIGHUP does
    /// not: a terminal that goes away often sends it twice (the shell passes it on to its foreground
    /// job, and the kernel sends it to that job again when the shell, the session's leader, exits), and
    /// the second must not cut short the stop the first began (found by a review: a run then exited
    /// without its summary, a worker without its grace period).
    package static func escalates(_ number: Int32) -> Bool {
        number != SIGHUP
    }

    /// From now on, the signals of ``numbers`` call `handler` with the signal's number (on a dispatch
    /// thread) instead of ending the process.
    package static func route(to handler: @escaping @Sendable (Int32) -> Void) {
        _ = installed
        Self.handler.withLock { $0 = handler }
    }
}
