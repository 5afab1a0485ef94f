internal import CCurl
import Foundation
import Synchronization

/// How a transfer ended.
enum TransferOutcome: Sendable {
    /// The body arrived in full; this is the final response's head.
    case success(TransferResponse)
    case failure(DownloadError)
    case canceled
}

/// Receives the events of one transfer. Every method is called on its lane's thread, so it must be quick
/// (a `pwrite`, a few counters) and must never block.
protocol TransferHandler: AnyObject, Sendable {
    /// The final response's head, before its first body byte (or at the end for an empty body).
    /// Return an error to refuse it: no byte of its body is then delivered.
    func transferDidReceiveResponse(_ response: TransferResponse) -> DownloadError?
    /// A piece of the body. Return an error to abort the transfer.
    func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> DownloadError?
    /// The end, exactly once.
    func transferDidComplete(_ outcome: TransferOutcome)
}

/// One HTTP request in the ``TransferEngine``.
///
/// After `submit`, everything but ``request``, ``handler`` and ``laneTicket`` belongs to its lane's thread.
final class Transfer: @unchecked Sendable {
    let request: TransferRequest
    let handler: any TransferHandler

    // MARK: Engine-thread state
    var handle: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    let errorBuffer: UnsafeMutablePointer<CChar>
    var response = TransferResponse()
    var responseChecked = false
    /// Why the handler aborted the transfer, if it did.
    var abortError: DownloadError?
    /// Paused by the speed limit.
    var isPaused = false
    /// Bytes this transfer may still take under the overall speed limit (its share of the budget).
    var allowance: Double = 0
    var isDone = false
    /// When a byte (or a header) last arrived, or when the transfer was added (uptime nanoseconds).
    var lastActivity: UInt64 = 0
    /// The lane that runs it (lanes outlive their transfers).
    unowned(unsafe) var laneReference: TransferLane?
    /// Picks the transfer's lane (modulo the engine's lane count): transfers are dealt in turn.
    let laneTicket: Int

    private static let tickets = Atomic<Int>(0)

    init(request: TransferRequest, handler: any TransferHandler) {
        self.request = request
        self.handler = handler
        laneTicket = Self.tickets.add(1, ordering: .relaxed).oldValue & Int.max
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }

    /// The URL for messages: never with credentials.
    var redactedURL: String { request.url.redactedString }

    /// Checks the response once, before the first body byte.
    func checkResponse() -> DownloadError? {
        guard !responseChecked else { return abortError }
        responseChecked = true
        if let error = handler.transferDidReceiveResponse(response) {
            abortError = error
            return error
        }
        return nil
    }

    var curlErrorMessage: String? {
        let text = String(cString: errorBuffer)
        return text.isEmpty ? nil : text
    }
}
