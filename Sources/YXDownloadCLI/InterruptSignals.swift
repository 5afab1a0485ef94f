import Dispatch
import Foundation
import YXQueue

/// SIGINT and SIGTERM for the whole process: taken from their default action once, and handed to
/// whoever asked for them last (``route(to:)``).
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
            sources = [SIGINT, SIGTERM].map { number in
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number)
                source.setEventHandler { InterruptSignals.handler.withLock { $0 }?(number) }
                source.resume()
                return source
            }
        }
    }

    private static let installed = Sources()

    /// From now on, SIGINT and SIGTERM call `handler` with the signal's number (on a dispatch thread)
    /// instead of ending the process.
    package static func route(to handler: @escaping @Sendable (Int32) -> Void) {
        _ = installed
        Self.handler.withLock { $0 = handler }
    }
}
