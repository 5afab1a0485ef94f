import Dispatch
@_spi(YXQueueInternals) import YXQueue

/// A generation counter that tasks can wait on: what a store's `waitForChange(after:timeout:)` is built on.
///
/// ``signal()`` moves the generation and wakes every waiter. A waiter that passes the generation it
/// read earlier returns at once if a signal came in between, so no wake-up is lost between looking
/// at the store and waiting. Stores call ``signal()`` for their own writes and for what they learn
/// from other processes (PostgreSQL notifications, SQLite's data version).
package final class ChangeSignal: Sendable {
    private enum Waiter {
        /// Announced, continuation not registered yet.
        case pending
        case waiting(CheckedContinuation<Void, Never>)
        /// Canceled before its continuation was registered.
        case canceled
    }

    private struct State {
        var generation: UInt64 = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
        var waitingCount = 0
        /// A task parked in ``waitForWaiters()`` (the poller of a store that polls).
        var idlePoller: CheckedContinuation<Void, Never>?
    }

    private let state = Locked(State())

    package init() {}

    /// The current generation.
    package var generation: UInt64 {
        state.withLock { $0.generation }
    }

    /// Whether some task waits right now.
    package var hasWaiters: Bool {
        state.withLock { $0.waitingCount > 0 }
    }

    /// Moves the generation and wakes every waiter.
    package func signal() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.generation &+= 1
            var waiting: [CheckedContinuation<Void, Never>] = []
            for (id, waiter) in state.waiters {
                if case .waiting(let continuation) = waiter {
                    waiting.append(continuation)
                    state.waiters[id] = nil
                }
            }
            state.waitingCount = 0
            return waiting
        }
        for waiter in waiters {
            waiter.resume()
        }
    }

    /// Waits for a signal after `generation`, at most `timeout` (`nil`: no limit); returns at once on
    /// task cancel.
    ///
    /// No task is created for the wait: the timeout is a Dispatch timer that resumes the waiter if it
    /// still waits.
    package func wait(after generation: UInt64, timeout: Duration?) async {
        if self.generation != generation || Task.isCancelled { return }
        await waitForSignal(after: generation, timeout: timeout)
    }

    /// Parks until some task waits (returns at once if one does, or on task cancel).
    package func waitForWaiters() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.waitingCount > 0 || Task.isCancelled { return true }
                    state.idlePoller = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let poller = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.idlePoller = nil }
                return state.idlePoller
            }
            poller?.resume()
        }
    }

    private func waitForSignal(after generation: UInt64, timeout: Duration?) async {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter &+= 1
            state.waiters[state.nextWaiter] = .pending
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (resumeNow, poller) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
                    if case .canceled = state.waiters[id] {
                        state.waiters[id] = nil
                        return (true, nil)
                    }
                    if state.generation != generation {
                        state.waiters[id] = nil
                        return (true, nil)
                    }
                    state.waiters[id] = .waiting(continuation)
                    state.waitingCount += 1
                    defer { state.idlePoller = nil }
                    return (false, state.idlePoller)
                }
                poller?.resume()
                if resumeNow {
                    continuation.resume()
                } else if let timeout {
                    let parts = timeout.components
                    let nanoseconds = max(0, parts.seconds) * 1_000_000_000 + max(0, parts.attoseconds) / 1_000_000_000
                    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(min(nanoseconds, Int64(Int.max))))) {
                        self.resumeWaiter(id)
                    }
                }
            }
        } onCancel: {
            resumeWaiter(id)
        }
    }

    /// Resumes one waiter if it still waits (timeout, cancel), or marks it so that it does not start.
    private func resumeWaiter(_ id: UInt64) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            switch state.waiters[id] {
            case .waiting(let continuation):
                state.waiters[id] = nil
                state.waitingCount -= 1
                return continuation
            case .pending:
                state.waiters[id] = .canceled
                return nil
            case .canceled, nil:
                return nil
            }
        }
        waiter?.resume()
    }
}
