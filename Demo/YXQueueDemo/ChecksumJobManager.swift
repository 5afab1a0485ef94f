import Foundation
import YXQueue

/// Turns a ``ChecksumJob`` into three operations that depend on each other:
///
/// ```
/// read (demo.read, 2 at a time) ──▶ hash (demo.hash, 2 at a time) ──▶ write (demo.write, 1 at a time)
/// ```
///
/// Each `OperationModel` names a queue of the dispatcher and that queue's limit, shared by every job:
/// with eight checksum jobs, at most two files are read at once, two hashed, and one sidecar written.
/// An operation enters its queue only once its prerequisite finished; it reads what the prerequisite
/// produced from its `result`.
final class ChecksumJobManager: JobManager, @unchecked Sendable {
    /// Reading files from disk.
    static let read = OperationModel(type: "demo.read", maxConcurrentOperationCount: 2)
    /// CPU work: as many as this machine's two cores.
    static let hash = OperationModel(type: "demo.hash", maxConcurrentOperationCount: 2)
    /// Writing the sidecar files.
    static let write = OperationModel(type: "demo.write", maxConcurrentOperationCount: 1)

    override func makeOperations() -> [QueueOperation] {
        guard let job = job as? ChecksumJob else { return [] }
        let file = job.file
        let meter = job.meter

        // 1. Read the whole file (the demo's files are a few MiB). A closure operation.
        let read = TaskOperation(model: Self.read, resourceIdentifier: file.lastPathComponent) { _ in
            try meter.measure(Self.read) { try Data(contentsOf: file) }
        }

        // 2. Hash it, reporting progress. A hand-written QueueOperation subclass.
        let hash = HashOperation(model: Self.hash, meter: meter) { read.result as? Data }
        hash.addPrerequisite(read)
        hash.progressWeight = 4  // most of the job's time: most of its progress bar

        // 3. Write `DIGEST  NAME` beside the file; its result is the job's result.
        let write = TaskOperation(model: Self.write, resourceIdentifier: file.lastPathComponent) { _ in
            try meter.measure(Self.write) {
                guard let digest = hash.result as? String, let data = read.result as? Data else {
                    throw HashOperation.Failure.missingInput
                }
                let sidecar = file.appendingPathExtension("fnv1a64")
                try Data("\(digest)  \(file.lastPathComponent)\n".utf8).write(to: sidecar, options: .atomic)
                return ChecksumReport(file: file, bytes: Int64(data.count), digest: digest, sidecar: sidecar)
            }
        }
        write.addPrerequisite(hash)

        return [read, hash, write]
    }
}
