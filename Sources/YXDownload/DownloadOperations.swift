import Foundation
import Logging
import YXQueue

/// The first step of a download: looks at the disk (skip, finalize, resume) and, for a segmented
/// download, asks the server for the length, the validator and whether ranges work.
///
/// When the plan is one stream (`-x 1`, or a `.part` written by one stream), this operation fetches it
/// too, instead of handing it to a part operation: one operation less per file, which was about an
/// eighth of the per-file cost of many small downloads (callgrind). Without a flush to disk before the
/// rename, it finalizes the file too (a digest, if one is needed, on a pool thread), so the download is
/// one operation. With the flush (the default) a ``FinalizeOperation`` follows it, and the transfer slot
/// goes to the next download as soon as the last byte is written: a download that waited for the disk
/// in its slot held up every transfer behind it (2,000 files of 8 KiB with 16 slots, by default: 0.57 s
/// with the slot held, 0.40 s without, where `--no-sync` took 0.28 s; 2026-11-28).
final class ProbeOperation: TransferOperation, @unchecked Sendable {
    /// A probe that continues one that had to wait: the disk was looked at already, only the network
    /// probe is left.
    private var isContinuation = false
    /// Decided in `perform` before the first request, read by the engine thread afterwards (the
    /// engine's queue of commands orders the two) and by the manager once the step ended.
    private(set) var streamsWholeFile = false
    /// Whether this operation also verifies, flushes and renames the file (decided in `perform`, read by
    /// the manager once the operation finished): always for one stream. Otherwise (segments) the manager
    /// adds a ``FinalizeOperation``.
    private(set) var finalizesItself = false

    /// A probe of `session`'s attempt; `continuing` for one that replaces a probe that had to wait.
    convenience init(queue: String, session: DownloadSession, continuing: Bool = false) {
        self.init(queue: queue, resourceIdentifier: "probe", session: session)
        isContinuation = continuing
    }

    override func perform(_ finish: @escaping Completion) {
        if !isContinuation {
            do {
                let needsNetwork = try session.prepare()
                let plan = session.plan
                logPlan(plan)
                streamsWholeFile =
                    !needsNetwork && plan == .transfer && session.segmentCount == 1 && !session.isSegmentComplete(0)
                // A skip costs one `stat`; one stream is finalized here too, right after its last byte, unless
                // it must wait for the disk. A `.part` finished by an earlier run is finalized here (a digest
                // over the file is computed on a pool thread, and the flush waits on `DiskSync`, so neither
                // holds up the thread that runs this step).
                finalizesItself =
                    plan == .skip || plan == .finalizeOnly || (streamsWholeFile && !session.options.syncBeforeRename)
                if !needsNetwork && !streamsWholeFile {
                    return finalizesItself ? finalize(finish) : finish(.success(nil))
                }
                if streamsWholeFile { progressWeight = 1 }  // the whole job's progress, now
            } catch {
                return finish(.failure(error))
            }
        }
        super.perform(finish)
    }

    /// Resumes and finalizations of a complete `.part` at info: they say an earlier run was interrupted.
    private func logPlan(_ plan: DownloadSession.Plan) {
        switch plan {
        case .finalizeOnly:
            session.logger.info(
                "finalizing a complete .part from an earlier run",
                metadata: ["url": "\(session.redactedURL)", "file": "\(session.partPath)"])
        case .transfer:
            let resumed = session.resumedFrom
            guard resumed > 0 else { return }
            session.logger.info(
                "resuming", metadata: ["url": "\(session.redactedURL)", "file": "\(session.partPath)", "bytes": "\(resumed)"])
        case .undecided, .skip:
            return
        }
    }

    override func makeRequest() -> TransferRequest? {
        streamsWholeFile ? session.request(forSegment: 0) : session.probeRequest()
    }

    /// A download of one stream (or a probe) starts on the lane that ended the download before it, when
    /// that lane starts it: each lane keeps its own downloads going, with no wake-up of the other
    /// lane and no object moving between cores. The parts of a segmented download are dealt in turn,
    /// so that two lanes copy a large file's bytes.
    override var staysOnThisLane: Bool { true }

    override func accept(_ response: TransferResponse, for request: TransferRequest) -> ResponseVerdict {
        if streamsWholeFile { return session.accept(response, segment: 0, requested: request) }
        if let error = session.applyProbe(response) { return .refuse(error) }
        // A 200 means the whole body is coming: the head was all the probe needed; a part fetches the body.
        return response.status == 200 ? .enough : .proceed
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

    override func succeed(_ finish: @escaping Completion) {
        if finalizesItself { finalize(finish) } else { finish(.success(nil)) }
    }

    /// Verifies, flushes and renames: here when that is cheap (a length check), on a pool thread when a
    /// digest must be computed over the whole file (this may be a transfer thread, which must not block).
    private func finalize(_ finish: @escaping Completion) {
        let isCanceled: @Sendable () -> Bool = { [self] in isCancelled }
        if session.finalizeReadsTheFile {
            DispatchQueue.global().async { [session] in session.finalize(isCanceled: isCanceled, finish) }
        } else {
            session.finalize(isCanceled: isCanceled, finish)
        }
    }

    override func errorMeansSuccess(_ error: DownloadError) -> Bool {
        streamsWholeFile && session.isSegmentComplete(0)
    }
}

/// Fetches one segment of the file (or the whole file in one stream) into the `.part`.
final class PartOperation: TransferOperation, @unchecked Sendable {
    /// The segment this operation fetches.
    private(set) var segment = 0

    /// The step that fetches `segment` of `session`'s file.
    convenience init(queue: String, session: DownloadSession, segment: Int) {
        self.init(queue: queue, resourceIdentifier: "part \(segment)", session: session)
        self.segment = segment
    }

    override func makeRequest() -> TransferRequest? { session.request(forSegment: segment) }

    override func accept(_ response: TransferResponse, for request: TransferRequest) -> ResponseVerdict {
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
final class FinalizeOperation: DownloadStep, @unchecked Sendable {
    /// The finalize step of `session`'s attempt.
    convenience init(queue: String, session: DownloadSession) {
        self.init(queue: queue, resourceIdentifier: "finalize", session: session)
    }

    /// Started where its slot is freed (the transfer thread that wrote the last byte, usually) unless it
    /// computes a digest over the file: a length check and a request to `DiskSync` never block.
    override var executesInline: Bool { !session.finalizeReadsTheFile }

    override func perform(_ finish: @escaping Completion) {
        session.finalize(isCanceled: { [self] in isCancelled }, finish)
    }
}
