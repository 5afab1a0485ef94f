import Foundation
import YXQueue

/// The first step of a download: looks at the disk (skip, finalize, resume) and, for a segmented
/// download, asks the server for the length, the validator and whether ranges work.
///
/// When the plan is one stream (`-x 1`, or a `.part` written by one stream), this operation fetches it
/// too, instead of handing it to a part operation: one operation less per file, which was about an
/// eighth of the per-file cost of many small downloads (callgrind).
final class ProbeOperation: TransferOperation, @unchecked Sendable {
    /// Decided in `execute` before the first request, read by the engine thread afterwards (the
    /// engine's queue of commands orders the two).
    private var streamsWholeFile = false
    /// Whether this operation also verifies and renames the file (decided in `execute`, read by the
    /// manager once the operation finished). Otherwise the manager adds a ``FinalizeOperation``.
    private(set) var finalizesItself = false

    override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        do {
            let needsNetwork = try session.prepare()
            let plan = session.plan
            streamsWholeFile = !needsNetwork && plan == .transfer && session.segmentCount == 1
                && !session.isSegmentComplete(0)
            // A skip costs one `stat`; the rest only when the finalize step is cheap (no digest to compute
            // over the file, no flush to wait for), as it then runs right after the last byte.
            finalizesItself = plan == .skip || (session.finalizesQuickly && (streamsWholeFile || plan == .finalizeOnly))
            if !needsNetwork && !streamsWholeFile {
                return finalizesItself ? session.finalize(completion) : completion(.success(nil))
            }
            if streamsWholeFile { progressWeight = 1 }  // the whole job's progress, now
        } catch {
            return completion(.failure(error))
        }
        super.execute(completion: completion)
    }

    override func makeRequest() -> TransferRequest {
        streamsWholeFile ? session.request(forSegment: 0) : session.probeRequest()
    }

    override func accept(_ response: TransferResponse, for request: TransferRequest) -> DownloadError? {
        if streamsWholeFile { return session.accept(response, segment: 0, requested: request) }
        if let error = session.applyProbe(response) { return error }
        // A 200 means the whole body is coming: stop it; the part operation fetches it.
        return response.status == 200 ? DownloadError(.transfer, "probe done", url: session.redactedURL) : nil
    }

    override func receive(_ bytes: UnsafeRawBufferPointer) -> DownloadError? {
        guard streamsWholeFile else { return nil }
        if let error = session.write(bytes, segment: 0) { return error }
        reportProgress(session.fraction(ofSegment: 0))
        return nil
    }

    override func transferSucceeded(_ response: TransferResponse) -> DownloadError? {
        streamsWholeFile ? session.completeSegment(0) : nil
    }

    override func succeed(_ finish: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        if finalizesItself { session.finalize(finish) } else { finish(.success(nil)) }
    }

    override func errorMeansSuccess(_ error: DownloadError) -> Bool {
        if streamsWholeFile { return session.isSegmentComplete(0) }
        return error.kind == .transfer && error.message == "probe done"
    }
}

/// Fetches one segment of the file (or the whole file in one stream) into the `.part`.
final class PartOperation: TransferOperation, @unchecked Sendable {
    /// The segment this operation fetches.
    var segment = 0

    override func makeRequest() -> TransferRequest { session.request(forSegment: segment) }

    override func accept(_ response: TransferResponse, for request: TransferRequest) -> DownloadError? {
        session.accept(response, segment: segment, requested: request)
    }

    override func receive(_ bytes: UnsafeRawBufferPointer) -> DownloadError? {
        if let error = session.write(bytes, segment: segment) { return error }
        reportProgress(session.fraction(ofSegment: segment))
        return nil
    }

    override func transferSucceeded(_ response: TransferResponse) -> DownloadError? {
        session.completeSegment(segment)
    }

    override func errorMeansSuccess(_ error: DownloadError) -> Bool {
        session.isSegmentComplete(segment)
    }
}

/// The last step, when the probe could not take it: verify length and checksum, flush to disk
/// (batched with other downloads, see `DiskSync`), rename to the final name.
final class FinalizeOperation: QueueOperation, @unchecked Sendable {
    /// Set by the manager before the operation is submitted.
    var session: DownloadSession!

    override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        session.finalize(completion)
    }
}
