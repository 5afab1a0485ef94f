import Foundation
import YXQueue

/// A custom job with no network in it: fingerprints one file and writes the fingerprint beside it.
///
/// It is a value: its parameters are its properties, and ``work`` says how it runs, as three steps that
/// depend on each other, each on its own queue of the dispatcher:
///
/// ```
/// read (demo.read) ──▶ hash (demo.hash) ──▶ write (demo.write)
/// ```
///
/// The queues' limits are the dispatcher's (``queues``): with eight checksum jobs, at most two files are
/// read at once, two hashed, and one sidecar written. A step runs once its prerequisite succeeded and
/// receives its output, typed.
///
/// ```swift
/// let report: ChecksumReport = try await dispatcher.run(ChecksumJob(file: url, meter: meter))
/// ```
struct ChecksumJob: JobDefinition {
    static let name = "checksum"

    /// The limits of the job's three queues, for the dispatcher.
    static let queues = ["demo.read": 2, "demo.hash": 2, "demo.write": 1]

    /// The file to fingerprint.
    let file: URL
    /// Where the steps report how many of them run at once.
    let meter: ConcurrencyMeter

    var work: JobWork<ChecksumReport> {
        let file = file
        let meter = meter
        // 1. Read the whole file (the demo's files are a few MiB).
        let read = JobStep(on: "demo.read") { _ in
            try meter.measure("demo.read") { try Data(contentsOf: file) }
        }
        // 2. Hash it, reporting progress and noticing a cancel between pieces.
        let hash = JobStep(on: "demo.hash", after: read) { data, context in
            try meter.measure("demo.hash") {
                try FNV1a64.hex(of: data, progress: context.reportProgress, isCancelled: { context.isCancelled })
            }
        }
        // 3. Write `DIGEST  NAME` beside the file; its output is the job's.
        let write = JobStep(on: "demo.write", after: hash, read) { digest, data, _ in
            try meter.measure("demo.write") {
                let sidecar = file.appendingPathExtension("fnv1a64")
                try Data("\(digest)  \(file.lastPathComponent)\n".utf8).write(to: sidecar, options: .atomic)
                return ChecksumReport(file: file, bytes: Int64(data.count), digest: digest, sidecar: sidecar)
            }
        }
        return JobWork(write)
    }
}
