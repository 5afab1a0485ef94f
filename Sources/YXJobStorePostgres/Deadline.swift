import Dispatch
import YXJobStore
@_spi(YXQueueInternals) import YXQueue

/// Runs an operation that may never finish, and gives up on it after a time.
///
/// postgres-nio 1.33.2 hands a statement to its connection's channel without a promise for the write:
/// when the server closes the connection at that very moment, the write fails unseen and the statement's
/// answer never comes. The operation runs in a task of its own; at the deadline the caller gets
/// ``JobStoreError/timedOut(_:)`` and `onTimeout` runs (the store closes the connection there, so that
/// the pool replaces it). A stuck operation's task is left behind; nothing waits for it.
enum Deadline {
    static func run<T: Sendable>(
        within timeout: Duration,
        _ operation: @escaping @Sendable () async throws -> T,
        onTimeout: @escaping @Sendable () -> Void
    ) async throws -> T {
        let outcome = Locked<Outcome<T>>(.waiting)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let finish = { @Sendable (result: Result<T, any Error>) -> Bool in
                let waiting = outcome.withLock { state -> CheckedContinuation<T, any Error>? in
                    guard case .waiting = state else { return nil }
                    state = .done
                    return continuation
                }
                waiting?.resume(with: result)
                return waiting != nil
            }
            let work = Task {
                do {
                    _ = finish(.success(try await operation()))
                } catch {
                    _ = finish(.failure(error))
                }
            }
            // A Dispatch timer rather than a sleeping task: most operations end long before it fires, and
            // then it does nothing.
            let parts = timeout.components
            let nanoseconds = max(0, parts.seconds) * 1_000_000_000 + max(0, parts.attoseconds) / 1_000_000_000
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
                if finish(.failure(JobStoreError.timedOut("no answer from the database within \(timeout)"))) {
                    onTimeout()
                    work.cancel()
                }
            }
        }
    }

    private enum Outcome<T> {
        case waiting
        case done
    }
}
