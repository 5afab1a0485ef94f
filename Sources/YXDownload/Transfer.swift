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

/// What a handler says about the head of a response, before any byte of its body.
enum ResponseVerdict: Sendable {
    /// Deliver the body.
    case proceed
    /// The head says everything that was needed (a probe's answer, or a `416` for a `.part` that is
    /// already whole): stop the transfer, which then completes as a success, without its body.
    case enough
    /// Refuse the response: the transfer fails with this error and no byte of its body is delivered.
    case refuse(DownloadError)
}

/// Why a transfer was stopped before curl finished it.
enum TransferStop: Sendable {
    /// The handler had what it needed (``ResponseVerdict/enough``): a success.
    case enough
    /// The response or a byte of it was refused, or the data could not be stored.
    case failed(DownloadError)
}

/// Receives the events of one transfer. Every method is called on its lane's thread, so it must be quick
/// (a `pwrite`, a few counters) and must never block.
protocol TransferHandler: AnyObject, Sendable {
    /// The final response's head, before its first body byte (or at the end for an empty body).
    func transferDidReceiveResponse(_ response: TransferResponse) -> ResponseVerdict
    /// A piece of the body: what the lane gathered from curl in one turn, up to
    /// ``TransferLane/coalescingCapacity`` bytes. Return an error to abort the transfer.
    func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> DownloadError?
    /// The transfer ended with `outcome`, and the lane is about to report it: the handler may give away
    /// now what only the transfer needed (a queue slot, so the next download starts). Return true to have
    /// ``transferDidComplete(_:)`` called later in the lane's turns, after the lane sent the requests
    /// started meanwhile; false to have it called at once.
    func transferWillComplete(_ outcome: TransferOutcome) -> Bool
    /// The end, exactly once.
    func transferDidComplete(_ outcome: TransferOutcome)
}

extension TransferHandler {
    /// Nothing to give away: the end is reported at once.
    func transferWillComplete(_ outcome: TransferOutcome) -> Bool { false }
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
    /// Why the transfer was stopped before curl finished it, if it was.
    var stop: TransferStop?
    /// What its verified connection trusts (see ``TrustStore``): not decided yet, the CA directory alone
    /// (a first try), or the whole setting (a retry, or where the directory does not go first).
    var trustAttempt = TrustAttempt.first
    enum TrustAttempt { case first, directoryOnly, whole }
    /// Paused by the speed limit.
    var isPaused = false
    /// Whether the speed limit ever paused it: its easy handle is then not reused (a reset handle kept
    /// pause state in libcurl releases before the fix of curl/curl#20641).
    var wasPaused = false
    /// Bytes this transfer may still take under the overall speed limit (its share of the budget).
    var allowance: Double = 0
    var isDone = false
    /// Body bytes received and not yet added to the engine's byte counter.
    var unreportedBytes: Int64 = 0
    /// When a byte (or a header) last arrived, as of the end of the lane's turn that saw it, or when the
    /// transfer was added (uptime nanoseconds).
    var lastActivity: UInt64 = 0
    /// Whether a byte or a header arrived in the lane's current turn. curl's callbacks only set this; the
    /// lane reads the clock once a turn and moves ``lastActivity`` (a clock read in each header line's
    /// callback was about 19 a file, 1 % of a run of small files, callgrind).
    var sawActivity = false
    /// The lane that runs it, from when the lane added it until it completed (then nil again, which
    /// breaks the cycle lane → active transfers → lane).
    var lane: TransferLane?
    /// Picks the transfer's lane (modulo the engine's lane count): transfers are dealt in turn.
    let laneTicket: Int

    private static let tickets = Atomic<Int>(0)

    /// The next ticket in turn.
    static func nextTicket() -> Int {
        tickets.add(1, ordering: .relaxed).oldValue & Int.max
    }

    /// - Parameter laneTicket: The lane (see ``TransferEngine/laneTicket(stayingOnThisLane:)``); by
    ///   default the next in turn.
    init(request: TransferRequest, handler: any TransferHandler, laneTicket: Int = Transfer.nextTicket()) {
        self.request = request
        self.handler = handler
        self.laneTicket = laneTicket
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }

    /// The URL for messages: never with credentials.
    var redactedURL: String { URLRedaction.redacted(request.url) }

    /// Asks the handler about the response once, before the first body byte; returns whether the body
    /// may be delivered (otherwise ``stop`` says why not).
    func checkResponse() -> Bool {
        guard !responseChecked else { return stop == nil }
        responseChecked = true
        switch handler.transferDidReceiveResponse(response) {
        case .proceed:
            return true
        case .enough:
            stop = .enough
        case .refuse(let error):
            stop = .failed(error)
        }
        return false
    }

    var curlErrorMessage: String? {
        let text = String(cString: errorBuffer)
        return text.isEmpty ? nil : text
    }
}
