import Foundation
import YXJobStore
import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a chaos run found.
public struct ChaosReport: Sendable, CustomStringConvertible {
    public var jobs: Int
    /// Executions the jobs recorded (more than `jobs` when some ran twice).
    public var executions: Int
    /// Jobs that ran more than once.
    public var jobsRunTwice: Int
    /// Executions beyond the first of their job.
    public var duplicateExecutions: Int
    /// Expired leases the store counted.
    public var leaseExpiries: Int
    /// Worker processes killed with SIGKILL.
    public var kills: Int
    public var seconds: Double

    public var description: String {
        "\(jobs) jobs, \(executions) executions, \(duplicateExecutions) duplicate executions in \(jobsRunTwice) jobs "
            + "(all after an expired lease; \(leaseExpiries) leases expired), \(kills) workers killed, "
            + String(format: "%.1f s", seconds)
    }
}

extension JobStoreConformance {
    /// Worker processes run `jobs` jobs that each append their id to a results table, while one of them
    /// is killed with SIGKILL every few hundred milliseconds and restarted. At the end every job has
    /// exactly one terminal record (succeeded), none is lost, and a job ran more than once only after one
    /// of its leases expired.
    ///
    /// - Parameters:
    ///   - workers: Worker processes running at once.
    ///   - jobs: Jobs to run.
    ///   - jobMilliseconds: How long each job runs after it recorded its execution (random in the range):
    ///     a kill in that window makes the job run again, after its lease expired.
    ///   - concurrency: Jobs each worker process runs at once.
    ///   - killEvery: The range of the random pause between two kills, in milliseconds.
    ///   - recoveryBound: The workers' recovery bound (their leases are 80 % of it).
    ///   - timeout: The longest the run may take.
    public func chaos(
        workers: Int,
        jobs: Int,
        jobMilliseconds: ClosedRange<Int> = 0...200,
        concurrency: Int = 4,
        killEvery: ClosedRange<Int> = 200...600,
        recoveryBound: Duration = .seconds(2),
        timeout: Duration = .seconds(900)
    ) async throws -> ChaosReport {
        try await withStore { store in
            let began = ContinuousClock.now
            var options = JobOptions()
            // Kills may expire many leases of one job; it must never run out of attempts here.
            options.retry = RetryPolicy(retries: 9_999, initialDelay: 0.01, maxDelay: 0.1, scope: .allErrors)
            var ids: [JobID] = []
            for start in stride(from: 0, to: jobs, by: 1000) {
                let count = min(1000, jobs - start)
                let requests = (0..<count).map { _ in
                    JobRequest(
                        name: "chaos.append",
                        payload: Data(String(Int.random(in: jobMilliseconds)).utf8),
                        options: options
                    )
                }
                ids += try await store.enqueue(requests).map(\.id)
            }
            let extra = [
                "--recovery-bound-ms", String(recoveryBound.milliseconds),
                "--concurrency", String(concurrency), "--batch", String(concurrency),
            ]
            var processes = try (0..<workers).map { _ in try startWorkerProcess(names: ["chaos.append"], extra: extra) }
            var kills = 0
            let deadline = ContinuousClock.now + timeout
            var everyone: [TestWorkerProcess] = processes
            do {
                while try await store.status().live > 0 {
                    guard ContinuousClock.now < deadline else {
                        throw ConformanceError("chaos: jobs still live after \(timeout): \(try await store.status())")
                    }
                    // The pause between kills is the chaos schedule, not a measurement.
                    try await Task.sleep(for: .milliseconds(Int.random(in: killEvery)))
                    let victim = Int.random(in: 0..<processes.count)
                    processes[victim].send(SIGKILL)
                    try await processes[victim].waitForExit()
                    kills += 1
                    processes[victim] = try startWorkerProcess(names: ["chaos.append"], extra: extra)
                    everyone.append(processes[victim])
                }
            } catch {
                for process in everyone { await process.killAndWait() }
                throw error
            }
            for process in processes {
                try await process.waitUntilReady()
                process.send(SIGTERM)
            }
            for process in processes {
                let exit = try await process.waitForExit()
                try expectEqual(exit, .exited(0), "a worker process after SIGTERM (\(process.errorOutput.suffix(2000)))")
            }
            let seconds = (ContinuousClock.now - began).seconds

            // Every job: exactly one terminal record, succeeded.
            var records: [JobID: JobRecord] = [:]
            var after: JobID?
            while true {
                let page = try await store.jobs(JobQuery(names: ["chaos.append"], after: after, limit: 2000))
                guard let last = page.last else { break }
                for record in page { records[record.id] = record }
                after = last.id
            }
            try expectEqual(records.count, jobs, "chaos jobs in the store")
            let notSucceeded = records.values.filter { $0.state != .succeeded }
            try expect(notSucceeded.isEmpty, "jobs not succeeded: \(notSucceeded.prefix(5).map { "\($0.id) \($0.state)" })")

            // Every execution, from the results table.
            let reader = try TestWorkerProcess(["results"] + harness.workerArguments, logFolder: logFolder)
            try expectEqual(try await reader.waitForExit(), .exited(0), "the results reader (\(reader.errorOutput))")
            var executions: [JobID: [Int]] = [:]
            var total = 0
            for line in reader.output.split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.count >= 2, let job = Int64(fields[0]), let attempt = Int(fields[1]) else { continue }
                executions[JobID(job), default: []].append(attempt)
                total += 1
            }
            var runTwice = 0
            var duplicates = 0
            for id in ids {
                let attempts = executions[id] ?? []
                let record = try unwrap(records[id], "the record of \(id)")
                try expect(!attempts.isEmpty, "job \(id) succeeded but never recorded an execution")
                try expectEqual(Set(attempts).count, attempts.count, "executions of job \(id) per attempt (\(attempts))")
                try expect(
                    attempts.count <= 1 + record.leaseExpiries,
                    "job \(id) ran \(attempts.count) times with \(record.leaseExpiries) expired leases"
                )
                if attempts.count > 1 {
                    runTwice += 1
                    duplicates += attempts.count - 1
                }
            }
            return ChaosReport(
                jobs: jobs,
                executions: total,
                jobsRunTwice: runTwice,
                duplicateExecutions: duplicates,
                leaseExpiries: records.values.reduce(0) { $0 + $1.leaseExpiries },
                kills: kills,
                seconds: seconds
            )
        }
    }
}
