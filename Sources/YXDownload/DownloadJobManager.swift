import Foundation
@_spi(YXQueueInternals) import YXQueue

/// Builds a download's operation graph: probe → N parts → finalize.
///
/// The probe decides, from the disk and (for a segmented download) one small request, what is left to
/// fetch; when it finishes, the manager adds one part operation per unfinished segment and makes the
/// finalize step wait for all of them. A one-stream download is fetched and finalized by the probe
/// itself, one operation: about a fifth of the cost of a small download was its second operation. This
/// is the original YXQueue's reason for a JobManager: operations with dependencies between them.
///
/// A transfer step that must wait (a `Retry-After`, a back-off) asks ``replace(_:after:retriesUsed:)``
/// for a successor: a ``DownloadWaitOperation`` and, behind it, a step that carries on the same work;
/// the finalize step then waits for the successor too.
final class DownloadJobManager: JobManager, @unchecked Sendable {
    private struct Attempt {
        var session: DownloadSession
        /// The attempt's finalize step, once there is one.
        var finalize: FinalizeOperation?
    }

    private let current = Locked<Attempt?>(nil)

    /// The session of the current attempt.
    var session: DownloadSession? { current.withLock { $0?.session } }

    override func makeOperations() -> [QueueOperation] {
        guard let job = job as? DownloadJob else {
            // Not a download: one step that fails with a DownloadError saying so.
            return [ProbeOperation(queue: DownloadQueue.probe, resourceIdentifier: "probe")]
        }
        let session = DownloadSession(
            url: job.url, final: job.location, options: job.options,
            checksum: job.checksum, engine: job.engine,
            destinationIsFresh: job.destinationIsFresh && current.withLock { $0 == nil },  // first attempt only
            onSaving: job.onSaving)
        // With one connection the probe usually fetches the whole file itself: it then runs under the
        // transfer limit, like a part.
        let probe = ProbeOperation(
            queue: job.options.connections == 1 ? DownloadQueue.transfer : DownloadQueue.probe, session: session)
        probe.progressWeight = 0  // 1 once it turns out to fetch the whole file itself
        current.withLock { $0 = Attempt(session: session) }
        return [probe]
    }

    override func operationDidFinish(_ operation: QueueOperation) {
        guard let probe = operation as? ProbeOperation, !probe.result.holds(exactly: TransferDeferral.self),
            !probe.finalizesItself
        else { return }
        let session = probe.session
        let finalize = FinalizeOperation(queue: DownloadQueue.finalize, session: session)
        finalize.progressWeight = 0
        finalize.addPrerequisite(probe)
        var parts: [PartOperation] = []
        if session.plan == .transfer {
            for index in 0..<session.segmentCount where !session.isSegmentComplete(index) {
                let part = PartOperation(queue: DownloadQueue.transfer, session: session, segment: index)
                part.progressWeight = Double(max(1, session.remainingBytes(index) ?? 1))
                part.addPrerequisite(probe)
                finalize.addPrerequisite(part)
                parts.append(part)
            }
        }
        current.withLock { attempt in
            if attempt?.session === session { attempt?.finalize = finalize }
        }
        addOperations(parts + [finalize])
        if !operations.contains(where: { $0 === finalize }) {
            // The job ended between the probe and now: nothing of this attempt will use the file again.
            session.end()
        }
    }

    /// Adds the successor of a transfer step that must wait `delay` seconds before it goes on.
    ///
    /// Called by `step` while it still executes: the successor and the finalize step's new prerequisite
    /// are in the graph before `step` finishes, so the finalize step can never start in between. (An
    /// attempt cannot change meanwhile either: a new one waits for executing operations.)
    ///
    /// - Returns: false when the attempt ended (nothing was added).
    func replace(_ step: TransferOperation, after delay: TimeInterval, retriesUsed: Int) -> Bool {
        let session = step.session
        let wait = DownloadWaitOperation(queue: DownloadQueue.wait, delay: delay)
        let successor: TransferOperation
        var finalize: FinalizeOperation?
        if let probe = step as? ProbeOperation {
            if probe.streamsWholeFile {
                // The probe was fetching the whole file: a part takes over, and a finalize step follows it.
                let part = PartOperation(queue: DownloadQueue.transfer, session: session, segment: 0)
                part.progressWeight = 1
                let last = FinalizeOperation(queue: DownloadQueue.finalize, session: session)
                last.progressWeight = 0
                last.addPrerequisite(part)
                finalize = last
                successor = part
            } else {
                successor = ProbeOperation(queue: probe.queue, session: session, continuing: true)
                successor.progressWeight = 0
            }
        } else if let part = step as? PartOperation {
            successor = PartOperation(queue: part.queue, session: session, segment: part.segment)
            successor.progressWeight = Double(max(1, session.remainingBytes(part.segment) ?? 1))
        } else {
            return false
        }
        successor.retriesUsed = retriesUsed
        successor.addPrerequisite(wait)
        successor.addPrerequisite(step)
        guard current.withLock({ $0?.session === session }) else { return false }
        // The successor joins the job first, and only then does the finalize step wait for it: a
        // pending operation that waits for one not in the job fails the graph as soon as any other
        // change is examined (another part asking for its successor at the same moment, say). In
        // between, the finalize step still waits for `step`, which executes, so it cannot start.
        step.progressWeight = 0  // its share of the job's progress moves to the successor
        addOperations([wait, successor] + (finalize.map { [$0] } ?? []))
        guard operations.contains(where: { $0 === successor }) else { return false }
        current.withLock { attempt in
            guard attempt?.session === session else { return }
            if let finalize {
                attempt?.finalize = finalize
            } else {
                attempt?.finalize?.addPrerequisite(successor)
            }
        }
        return true
    }
}
