import Foundation
import Logging
@_spi(YXQueueInternals) import YXQueue

/// A download step that performs one HTTP transfer on the ``TransferEngine`` and handles its failures,
/// without blocking a thread and without holding a transfer slot while it waits.
///
/// Subclasses say what to request and what to do with the response and the bytes. This class checks
/// the origin's `Retry-After` gate before the request, decides whether a failure is retried, and
/// cancels a running transfer at once (it is removed from curl). When the step must wait (the gate is
/// closed, or a retry's back-off), it asks its manager for a replacement behind a
/// ``DownloadWaitOperation`` and ends with a ``TransferDeferral``: the waiting costs no slot of the
/// transfer queue, so other hosts' downloads go on meanwhile.
class TransferOperation: DownloadStep, TransferHandler, @unchecked Sendable {
    private enum Phase {
        case idle
        /// The request is the transfer's (``Transfer/request``, immutable): no copy of it here.
        case transferring(Transfer)
        /// Waiting in place (``DownloadOptions/keepsSlotWhileWaiting``) for this timer, which begins again.
        case waiting(DispatchWorkItem)
        case done
    }

    private struct State {
        var phase = Phase.idle
        /// Retries used by this piece of work so far, over the steps it replaced.
        var retriesUsed = 0
        var completion: Completion?
        /// What ``transferSucceeded(_:)`` said of a transfer that ended well, when it was asked early
        /// (``transferWillComplete(_:)``): nil for a good end.
        var earlyCheck: DownloadError??
    }

    private let state = Locked(State())

    /// Retries already used by the steps this one continues (set before it is submitted).
    var retriesUsed: Int {
        get { state.withLock { $0.retriesUsed } }
        set { state.withLock { $0.retriesUsed = newValue } }
    }

    // MARK: For subclasses

    /// The request to send now; nil when the step has nothing to ask (it then fails).
    func makeRequest() -> TransferRequest? { nil }
    /// Whether the transfer runs on the lane whose thread starts this step (see ``Transfer``), rather
    /// than on the next lane in turn.
    var staysOnThisLane: Bool { false }
    /// Judges the response before any body byte. Engine thread.
    func accept(_ response: TransferResponse, for request: TransferRequest) -> ResponseVerdict { .proceed }
    /// Receives body bytes. Engine thread.
    func receive(_ bytes: UnsafeRawBufferPointer) -> DownloadError? { nil }
    /// The transfer ended without error; returns an error if what arrived is not enough.
    func transferSucceeded(_ response: TransferResponse) -> DownloadError? { nil }
    /// An error ended the transfer: return true when the work is done all the same (for example every
    /// byte of the segment had arrived before the connection broke).
    func errorMeansSuccess(_ error: DownloadError) -> Bool { false }
    /// The transfer is done and good: report the step's result through `finish`, now or later (default:
    /// no result, at once). Engine thread.
    func succeed(_ finish: @escaping Completion) {
        finish(.success(nil))
    }

    // MARK: DownloadStep

    /// `execute` prepares a request and hands it to the engine: it starts on the thread that freed its
    /// slot (usually the transfer thread that finished the previous download), with no hand-off.
    override var executesInline: Bool { true }

    override func perform(_ finish: @escaping Completion) {
        state.withLock { $0.completion = finish }
        begin()
    }

    override func operationDidCancel() {
        let (transfer, timer): (Transfer?, DispatchWorkItem?) = state.withLock { s in
            switch s.phase {
            case .transferring(let transfer): (transfer, nil)
            case .waiting(let timer): (nil, timer)
            case .idle, .done: (nil, nil)
            }
        }
        if let transfer { session.engine.cancel(transfer) }
        if let timer {
            timer.cancel()  // what arrived was saved when the wait began (`failed`)
            session.removeIfEmpty()  // nothing arrived: no empty `.part` and sidecar left behind
            finish(.failure(CancellationError()))
        }
    }

    private func begin() {
        let wait = session.engine.hostGate.wait(for: session.url)
        if wait > 0 {
            session.logger.debug(
                "waiting for the host's Retry-After",
                metadata: ["url": "\(session.redactedURL)", "seconds": "\(wait)"])
            return deferWork(by: wait, retriesUsed: retriesUsed)
        }
        guard let request = makeRequest() else {
            return finish(.failure(DownloadError(.transfer, "nothing to request", url: session.redactedURL)))
        }
        let transfer = Transfer(
            request: request, handler: self,
            laneTicket: session.engine.laneTicket(stayingOnThisLane: staysOnThisLane))
        let proceed = state.withLock { s -> Bool in
            guard case .idle = s.phase, !isCancelled else { return false }
            s.phase = .transferring(transfer)
            return true
        }
        guard proceed else { return finish(.failure(CancellationError())) }
        session.logger.trace(
            "request",
            metadata: [
                "url": "\(session.redactedURL)", "step": "\(resourceIdentifier ?? queue)",
                "range": "\(transfer.request.curlRange ?? "")", "if-range": "\(transfer.request.ifRange ?? "")",
            ])
        session.engine.submit(transfer)
    }

    /// Ends this step so that its slot is free, with a replacement that goes on after `delay`; or, with
    /// ``DownloadOptions/keepsSlotWhileWaiting``, waits in place and begins again.
    private func deferWork(by delay: TimeInterval, retriesUsed: Int) {
        if session.options.keepsSlotWhileWaiting { return waitInPlace(delay, retriesUsed: retriesUsed) }
        guard !isCancelled, let manager = manager as? DownloadJobManager,
            manager.replace(self, after: delay, retriesUsed: retriesUsed)
        else { return finish(.failure(CancellationError())) }
        finish(.success(TransferDeferral(delay: delay, retriesUsed: retriesUsed)))
    }

    /// Keeps the slot, and begins again (the gate, then a new request) after `delay`, without a thread.
    private func waitInPlace(_ delay: TimeInterval, retriesUsed: Int) {
        let timer = DispatchWorkItem { [self] in
            let goesOn = state.withLock { s -> Bool in
                guard case .waiting = s.phase else { return false }  // canceled meanwhile
                s.phase = .idle
                return true
            }
            if goesOn { begin() }
        }
        let armed = state.withLock { s -> Bool in
            guard case .idle = s.phase, !isCancelled else { return false }
            s.retriesUsed = retriesUsed
            s.phase = .waiting(timer)
            return true
        }
        guard armed else { return finish(.failure(CancellationError())) }
        let seconds = delay.isFinite ? min(max(0, delay), DownloadWaitOperation.longest) : DownloadWaitOperation.longest
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: timer)
    }

    // MARK: TransferHandler (engine thread)

    func transferDidReceiveResponse(_ response: TransferResponse) -> ResponseVerdict {
        session.logger.trace(
            "response",
            metadata: [
                "url": "\(session.redactedURL)", "step": "\(resourceIdentifier ?? queue)", "status": "\(response.status)",
                "length": "\(response.contentLength.map(String.init) ?? "")",
                "content-range": "\(response.headers.contentRange ?? "")",
            ])
        if response.hasInvalidContentLength, (200..<300).contains(response.status) {
            return .refuse(Self.invalidLength(response, url: session.redactedURL))
        }
        guard let transfer = currentTransfer else { return .proceed }
        return accept(response, for: transfer.request)
    }

    /// The failure of a response whose `Content-Length` is no length
    /// (``TransferResponse/hasInvalidContentLength``): nothing tells where its body ends, so none of it is
    /// kept. The value is shown when it is short and printable.
    private static func invalidLength(_ response: TransferResponse, url: String) -> DownloadError {
        let value = response.headers.contentLength ?? ""
        let items = value.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingASCIIWhitespace() }
        let numbers = items.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }
        let described: String
        if value.utf8.count > 48 || !value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            described = "an unprintable Content-Length of \(value.utf8.count) bytes"
        } else if items.count > 1, numbers {
            described = "Content-Length fields that disagree (\(items.joined(separator: ", ")))"
        } else {
            described = "an invalid Content-Length (\"\(value)\")"
        }
        return DownloadError(
            .unexpectedResponse, "the server sent \(described), so the end of its body cannot be known", url: url,
            httpStatus: response.status)
    }

    func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> DownloadError? {
        receive(bytes)
    }

    /// A transfer that ended well and brought what was asked (``transferSucceeded(_:)``) gives its slot
    /// to the next step in line: what is left (verify, flush, rename, end the job) transfers nothing,
    /// and the next download's request leaves before it is done.
    func transferWillComplete(_ outcome: TransferOutcome) -> Bool {
        guard case .success(let response) = outcome else { return false }
        let error = transferSucceeded(response)
        state.withLock { $0.earlyCheck = .some(error) }
        return error == nil && releaseSlot()
    }

    func transferDidComplete(_ outcome: TransferOutcome) {
        let earlyCheck = state.withLock { s -> DownloadError?? in
            if case .transferring = s.phase { s.phase = .idle }
            defer { s.earlyCheck = nil }
            return s.earlyCheck
        }
        switch outcome {
        case .success(let response):
            if let error = earlyCheck ?? transferSucceeded(response) {
                failed(error)
            } else {
                succeed { [self] in finish($0) }
            }
        case .failure(let error):
            failed(error)
        case .canceled:
            session.persist()
            session.removeIfEmpty()
            finish(.failure(CancellationError()))
        }
    }

    private var currentTransfer: Transfer? {
        state.withLock { s in
            if case .transferring(let transfer) = s.phase { return transfer }
            return nil
        }
    }

    private func failed(_ error: DownloadError) {
        if errorMeansSuccess(error) {
            succeed { [self] in finish($0) }
            return
        }
        session.persist()
        if isCancelled {
            session.removeIfEmpty()
            return finish(.failure(CancellationError()))
        }
        let policy = session.options.retryPolicy
        let used = retriesUsed
        let throttled = error.httpStatus == 429 || error.httpStatus == 503
        if throttled, let retryAfter = error.retryAfter, retryAfter > policy.maxRetryAfter {
            session.removeIfEmpty()
            return finish(.failure(Self.retryAfterTooLong(error, retryAfter, policy)))
        }
        guard error.isTransient, used < policy.retries else {
            session.removeIfEmpty()
            return finish(.failure(error))
        }
        if throttled, let retryAfter = error.retryAfter {
            session.engine.hostGate.hold(session.url, for: retryAfter)
        }
        let delay = policy.delay(beforeRetry: used + 1, retryAfter: error.retryAfter)
        session.engine.instruments.retries.increment()
        session.logger.info(
            "retrying",
            metadata: [
                "url": "\(session.redactedURL)", "step": "\(resourceIdentifier ?? queue)",
                "retry": "\(used + 1) of \(policy.retries)", "delay": "\(delay)", "error": "\(error.message)",
            ])
        deferWork(by: delay, retriesUsed: used + 1)
    }

    /// The failure for a `Retry-After` longer than the policy waits.
    private static func retryAfterTooLong(_ error: DownloadError, _ seconds: TimeInterval, _ policy: RetryPolicy)
        -> DownloadError
    {
        let asked = seconds < 1e15 ? "\(Int(seconds)) s" : "\(seconds) s"
        var failure = error
        failure.message =
            "HTTP \(error.httpStatus ?? 0): the server asks to wait \(asked) (Retry-After), longer than the "
            + "\(Int(policy.maxRetryAfter)) s a download waits"
        return failure
    }

    private func finish(_ result: Result<(any Sendable)?, any Error>) {
        let completion = state.withLock { s -> Completion? in
            s.phase = .done
            defer { s.completion = nil }
            return s.completion
        }
        completion?(result)
    }
}
