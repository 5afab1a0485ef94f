import Foundation
import YXQueue

/// A download operation that performs HTTP transfers on the ``TransferEngine`` and retries transient
/// failures with back-off, without blocking a thread while it waits.
///
/// Subclasses say what to request and what to do with the response and the bytes; this class handles
/// the per-host `Retry-After` gate, the retry loop and cancellation (a running transfer is removed from
/// curl at once; a pending retry timer is dropped).
class TransferOperation: QueueOperation, TransferHandler, @unchecked Sendable {
    /// Set by the manager before the operation is submitted.
    var session: DownloadSession!

    private enum Phase {
        case idle
        case transferring(Transfer, TransferRequest)
        case waiting(DispatchWorkItem)
        case done
    }

    private struct State {
        var phase = Phase.idle
        var retriesUsed = 0
        var completion: (@Sendable (Result<(any Sendable)?, any Error>) -> Void)?
    }

    private let state = Locked(State())

    // MARK: For subclasses

    /// The request to send now (called before each try).
    func makeRequest() -> TransferRequest { fatalError("subclass") }
    /// Checks the response before any body byte. Engine thread.
    func accept(_ response: TransferResponse, for request: TransferRequest) -> DownloadError? { nil }
    /// Receives body bytes. Engine thread.
    func receive(_ bytes: UnsafeRawBufferPointer) -> DownloadError? { nil }
    /// The transfer ended without error; returns an error if what arrived is not enough.
    func transferSucceeded(_ response: TransferResponse) -> DownloadError? { nil }
    /// An error ended the transfer: return true when it actually means success (for example a 416 on a
    /// `.part` that is already complete).
    func errorMeansSuccess(_ error: DownloadError) -> Bool { false }
    /// The transfer is done and good: report the operation's result through `finish`, now or later
    /// (default: no result, at once). Engine thread.
    func succeed(_ finish: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        finish(.success(nil))
    }

    // MARK: QueueOperation

    override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        state.withLock { $0.completion = completion }
        begin()
    }

    override func operationDidCancel() {
        let action: (() -> Void)? = state.withLock { s in
            switch s.phase {
            case .transferring(let transfer, _):
                return { [session] in session?.engine.cancel(transfer) }
            case .waiting(let timer):
                s.phase = .done
                return { [self] in
                    timer.cancel()
                    finish(.failure(CancellationError()))
                }
            case .idle, .done:
                return nil
            }
        }
        action?()
    }

    private func begin() {
        let wait = HostGate.shared.wait(for: session.url)
        if wait > 0 {
            schedule(after: wait)
            return
        }
        let request = makeRequest()
        let transfer = Transfer(request: request, handler: self)
        let proceed = state.withLock { s -> Bool in
            guard case .idle = s.phase, !isCancelled else { return false }
            s.phase = .transferring(transfer, request)
            return true
        }
        guard proceed else {
            finishIfNotDone(.failure(CancellationError()))
            return
        }
        session.engine.submit(transfer)
    }

    private func schedule(after seconds: TimeInterval) {
        let timer = DispatchWorkItem { [self] in
            let go = state.withLock { s -> Bool in
                guard case .waiting = s.phase else { return false }
                s.phase = .idle
                return true
            }
            if go { begin() }
        }
        let scheduled = state.withLock { s -> Bool in
            guard !isCancelled else { return false }
            s.phase = .waiting(timer)
            return true
        }
        guard scheduled else {
            finishIfNotDone(.failure(CancellationError()))
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: timer)
    }

    // MARK: TransferHandler (engine thread)

    func transferDidReceiveResponse(_ response: TransferResponse) -> DownloadError? {
        guard let request = currentRequest else { return nil }
        return accept(response, for: request)
    }

    func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> DownloadError? {
        receive(bytes)
    }

    func transferDidComplete(_ outcome: TransferOutcome) {
        state.withLock { s in
            if case .transferring = s.phase { s.phase = .idle }
        }
        switch outcome {
        case .success(let response):
            if let error = transferSucceeded(response) {
                failed(error)
            } else {
                succeed { [self] in finish($0) }
            }
        case .failure(let error):
            failed(error)
        case .canceled:
            session.persist()
            finishIfNotDone(.failure(CancellationError()))
        }
    }

    private var currentRequest: TransferRequest? {
        state.withLock { s in
            if case .transferring(_, let request) = s.phase { return request }
            return nil
        }
    }

    private func failed(_ error: DownloadError) {
        if errorMeansSuccess(error) {
            succeed { [self] in finish($0) }
            return
        }
        session.persist()
        let retry: Int? = state.withLock { s in
            guard error.isTransient, s.retriesUsed < session.options.retry.retries, !isCancelled else { return nil }
            s.retriesUsed += 1
            return s.retriesUsed
        }
        guard let retry else {
            session.removeIfEmpty()
            finishIfNotDone(.failure(isCancelled ? CancellationError() : error))
            return
        }
        if let retryAfter = error.retryAfter, error.httpStatus == 429 || error.httpStatus == 503 {
            HostGate.shared.hold(session.url, for: retryAfter)
        }
        schedule(after: session.options.retry.delay(beforeRetry: retry, retryAfter: error.retryAfter))
    }

    private func finishIfNotDone(_ result: Result<(any Sendable)?, any Error>) {
        finish(result)
    }

    private func finish(_ result: Result<(any Sendable)?, any Error>) {
        let completion = state.withLock { s -> (@Sendable (Result<(any Sendable)?, any Error>) -> Void)? in
            s.phase = .done
            defer { s.completion = nil }
            return s.completion
        }
        completion?(result)
    }
}
