import Foundation
@_spi(YXQueueInternals) import YXQueue

/// Waits for a time without a thread and without a transfer slot: the step before a deferred transfer
/// (see ``TransferDeferral``). Canceling it ends the wait at once.
final class DownloadWaitOperation: QueueOperation, @unchecked Sendable {
    private struct State {
        var timer: DispatchWorkItem?
        var completion: (@Sendable (Result<(any Sendable)?, any Error>) -> Void)?
    }

    private let state = Locked(State())
    /// Seconds to wait (set once, before the operation is submitted).
    private(set) var delay: TimeInterval = 0

    /// The longest wait (a day): longer ones are refused before they get here.
    static let longest: TimeInterval = 86_400

    /// A wait of `delay` seconds on `queue`.
    convenience init(queue: String, delay: TimeInterval) {
        self.init(queue: queue, resourceIdentifier: "wait")
        self.delay = delay.isFinite ? min(max(0, delay), Self.longest) : Self.longest
    }

    /// Arming a timer does not block.
    override var executesInline: Bool { true }

    override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        let timer = DispatchWorkItem { [self] in complete(.success(nil)) }
        let begun = state.withLock { s -> Bool in
            guard !isCancelled else { return false }
            s.completion = completion
            s.timer = timer
            return true
        }
        guard begun else { return completion(.failure(CancellationError())) }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay, execute: timer)
    }

    override func operationDidCancel() {
        state.withLock { $0.timer }?.cancel()
        complete(.failure(CancellationError()))
    }

    private func complete(_ result: Result<(any Sendable)?, any Error>) {
        let completion = state.withLock { s in
            defer {
                s.completion = nil
                s.timer = nil
            }
            return s.completion
        }
        completion?(result)
    }
}
