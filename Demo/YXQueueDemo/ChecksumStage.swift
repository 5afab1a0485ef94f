import Foundation
import YXQueue

/// The second part of the demo: a ``ChecksumJob`` for every downloaded file, on the same dispatcher as
/// the downloads. Half of the jobs are watched by a ``ChecksumLogger`` (the delegate form), the other
/// half are awaited with `try await job.run(on:)` (the async form). They all share the three queues of
/// ``ChecksumJobManager``, so the per-type limits apply across both forms.
enum ChecksumStage {
    /// What the stage did.
    struct Outcome: Sendable {
        /// The finished jobs' reports, in the order they finished.
        var reports: [ChecksumReport]
        /// One line per job that failed or was canceled.
        var failures: [String]
        /// Jobs watched by the delegate, and jobs awaited.
        var delegateJobs: Int
        var asyncJobs: Int
    }

    static func run(files: [URL], on dispatcher: Dispatcher, terminal: Terminal) async -> Outcome {
        let meter = ConcurrencyMeter()
        let logger = ChecksumLogger(terminal: terminal)
        let jobs = files.enumerated().map { index, file in ChecksumJob(file: file, meter: meter, tag: index) }
        let delegateJobs = jobs.filter { $0.tag % 2 == 0 }
        let asyncJobs = jobs.filter { $0.tag % 2 == 1 }

        terminal.line("Checksums: a ChecksumJob per file, read → hash → write NAME.fnv1a64")
        terminal.line(ChecksumLogger.line(form: "form", name: "file", "fnv1a-64", "what the caller saw"))

        // The delegate form: add the delegate, then hand the job to the dispatcher.
        for job in delegateJobs {
            job.addDelegate(logger)
            dispatcher.add(job)
        }

        // The async form: `run(on:)` starts the job and returns its result (or throws its error).
        let awaited = await withTaskGroup(of: (String, Result<ChecksumReport, any Error>).self) { group in
            for job in asyncJobs {
                group.addTask {
                    do {
                        guard let report = try await job.run(on: dispatcher) as? ChecksumReport else {
                            return (job.file.lastPathComponent, .failure(HashOperation.Failure.missingInput))
                        }
                        terminal.line(
                            ChecksumLogger.line(
                                form: "async", name: job.file.lastPathComponent, report.digest,
                                "the result of try await job.run(on:)"))
                        return (job.file.lastPathComponent, .success(report))
                    } catch {
                        terminal.line(
                            ChecksumLogger.line(
                                form: "async", name: job.file.lastPathComponent, "FAILED",
                                "job.run(on:) threw \(error)"))
                        return (job.file.lastPathComponent, .failure(error))
                    }
                }
            }
            var results: [(String, Result<ChecksumReport, any Error>)] = []
            for await result in group { results.append(result) }
            return results
        }

        // The delegate-form jobs end on their own; wait for them and their last callbacks.
        await dispatcher.waitForAllJobs()

        let models = [ChecksumJobManager.read, ChecksumJobManager.hash, ChecksumJobManager.write]
        terminal.line(
            "  queues    "
                + models.map { "\($0.type) limit \($0.maxConcurrentOperationCount) peak \(meter.peak(of: $0))" }
                .joined(separator: ", "))

        var outcome = Outcome(
            reports: logger.reports, failures: logger.failures,
            delegateJobs: delegateJobs.count, asyncJobs: asyncJobs.count)
        for (name, result) in awaited {
            switch result {
            case .success(let report): outcome.reports.append(report)
            case .failure(let error): outcome.failures.append("\(name): \(error)")
            }
        }
        return outcome
    }
}
