import Foundation
import YXQueue

/// Builds a download's operation graph: probe → N parts → finalize.
///
/// The probe decides, from the disk and (for a segmented download) one small request, what is left to
/// fetch; when it finishes, the manager adds one part operation per unfinished segment and makes the
/// finalize step wait for all of them. A one-stream download is fetched by the probe itself: probe →
/// finalize, or the probe alone when finalizing is quick (no digest to compute, no flush to wait for):
/// about a fifth of the cost of a small download was its second operation. This is the original
/// YXQueue's reason for a JobManager: operations with dependencies between them.
final class DownloadJobManager: JobManager, @unchecked Sendable {
    private let current = Locked<DownloadSession?>(nil)

    /// The session of the current attempt.
    var session: DownloadSession? { current.withLock { $0 } }

    override func makeOperations() -> [QueueOperation] {
        let job = job as! DownloadJob
        let session = DownloadSession(
            url: job.url, finalFile: job.destination, options: job.options, checksum: job.checksum, engine: job.engine)
        // With one connection the probe usually fetches the whole file itself: it then runs under the
        // transfer limit, like a part.
        let probe = ProbeOperation(
            model: job.options.connections == 1 ? job.transferModel : job.probeModel, resourceIdentifier: "probe")
        probe.session = session
        probe.progressWeight = 0  // 1 once it turns out to fetch the whole file itself
        current.withLock { $0 = session }
        return [probe]
    }

    override func operationDidFinish(_ operation: QueueOperation) {
        guard let probe = operation as? ProbeOperation, !probe.finalizesItself, let session else { return }
        let job = job as! DownloadJob
        let finalize = FinalizeOperation(model: job.finalizeModel, resourceIdentifier: "finalize")
        finalize.session = session
        finalize.progressWeight = 0
        finalize.addPrerequisite(probe)
        var parts: [PartOperation] = []
        if session.plan == .transfer {
            for index in 0..<session.segmentCount where !session.isSegmentComplete(index) {
                let part = PartOperation(model: job.transferModel, resourceIdentifier: "part \(index)")
                part.session = session
                part.segment = index
                part.progressWeight = Double(max(1, session.remainingBytes(index) ?? 1))
                part.addPrerequisite(probe)
                finalize.addPrerequisite(part)
                parts.append(part)
            }
        }
        addOperations(parts + [finalize])
    }
}
