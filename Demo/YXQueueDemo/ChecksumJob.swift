import Foundation
import YXQueue

/// A custom job with no network in it: fingerprints one file and writes the fingerprint beside it.
///
/// A `Job` is the *model* of the work, only parameters. What it takes to do the work is the
/// ``ChecksumJobManager``'s business: it builds three dependent operations, read → hash → write.
///
/// ```swift
/// let job = ChecksumJob(file: url, meter: meter)
/// let report = try await job.run(on: dispatcher) as? ChecksumReport    // or: add a JobDelegate, then start
/// ```
final class ChecksumJob: Job, @unchecked Sendable {
    /// The file to fingerprint.
    let file: URL
    /// Where the operations report how many of them run at once.
    let meter: ConcurrencyMeter

    init(file: URL, meter: ConcurrencyMeter, tag: Int = 0) {
        self.file = file
        self.meter = meter
        super.init(tag: tag)
    }

    /// The manager that turns this job into operations.
    override class var managerType: JobManager.Type { ChecksumJobManager.self }

    override var jobType: String { "checksum" }
}
