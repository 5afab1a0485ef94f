import Foundation
import YXQueue
import YXTerminal

/// The second part of the demo: a ``ChecksumJob`` for every downloaded file, on the same dispatcher as
/// the downloads. Half of the jobs are watched by a ``ChecksumLogger`` (the delegate form), the other
/// half are awaited with `try await dispatcher.run(job)` (the async form). They all share the three queues
/// of ``ChecksumJob``, so the dispatcher's limits apply across both forms.
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

    static func run(files: [URL], on dispatcher: Dispatcher, terminal: Console) async -> Outcome {
        let meter = ConcurrencyMeter()
        let logger = ChecksumLogger(terminal: terminal)
        let definitions = files.map { ChecksumJob(file: $0, meter: meter) }
        let delegateJobs = definitions.enumerated().filter { $0.offset % 2 == 0 }
        let asyncJobs = definitions.enumerated().filter { $0.offset % 2 == 1 }

        terminal.line("Checksums: a ChecksumJob per file, read → hash → write NAME.fnv1a64")
        terminal.line(ChecksumLogger.line(form: "form", name: "file", "fnv1a-64", "what the caller saw"))

        // The delegate form: make the job, hand its class-layer `Job` the delegate, then start it. (The
        // logger reads the typed output from the handle when the job finishes.)
        for (index, definition) in delegateJobs {
            let handle = JobHandle(definition, tag: index)
            logger.watch(handle, name: definition.file.lastPathComponent)
            handle.start(on: dispatcher)
        }

        // The async form: `run` starts the job and returns its typed output (or throws its error).
        let awaited = await withTaskGroup(of: (String, Result<ChecksumReport, any Error>).self) { group in
            for (index, definition) in asyncJobs {
                group.addTask {
                    let name = definition.file.lastPathComponent
                    do {
                        let report = try await dispatcher.run(definition, tag: index)
                        terminal.line(
                            ChecksumLogger.line(
                                form: "async", name: name, report.digest, "the output of try await dispatcher.run(job)"))
                        return (name, .success(report))
                    } catch {
                        terminal.line(
                            ChecksumLogger.line(form: "async", name: name, "FAILED", "dispatcher.run(job) threw \(error)"))
                        return (name, .failure(error))
                    }
                }
            }
            var results: [(String, Result<ChecksumReport, any Error>)] = []
            for await result in group { results.append(result) }
            return results
        }

        // The delegate-form jobs end on their own; wait for them and their last callbacks.
        await dispatcher.waitForAllJobs()

        terminal.line(
            "  queues    "
                + ChecksumJob.queues.keys.sorted().map {
                    "\($0) limit \(dispatcher.limit(for: $0)) peak \(meter.peak(of: $0))"
                }
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
