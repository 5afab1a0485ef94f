import Foundation
import YXJobStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension JobStoreConformance {
    /// A worker process runs a job that reports progress: this process sees the progress in the
    /// status, cancels the job, and the worker process stops it and records it canceled, then shuts down
    /// on SIGTERM.
    public func cancelAndProgressAcrossProcesses() async throws {
        try await withStore { store in
            let id = try await store.enqueue(JobRequest(name: "conformance.block")).id
            let process = try startWorkerProcess(names: ["conformance.block"])
            var seen: JobStoreStatus.RunningJob?
            try await waitUntil("this process sees the other's progress") {
                let status = try await store.status()
                seen = status.workers.first { $0.worker.contains(":\(process.pid):") }?.jobs.first { $0.id == id }
                return seen?.progress.completedUnits == 500
            }
            try expectEqual(seen?.progress.totalUnits, 1000, "total units")
            try expectEqual(seen?.progress.fraction, 0.5, "fraction")
            let status = try await store.status()
            try expectEqual(status.count(.running), 1, "running jobs in the status")
            try expect(status.formattedTable().contains("500/1000"), "the table shows the units:\n\(status.formattedTable())")
            let decoded = try JSONDecoder.iso8601.decode(JobStoreStatus.self, from: try status.jsonData())
            try expectEqual(decoded.workers.count, status.workers.count, "workers in the status JSON")

            try expectEqual(try await store.cancel(id, reason: "canceled by the test"), .requested, "cancel of a running job")
            try await waitUntil("the worker process stops the job and records the cancel") {
                try await store.job(id)?.state == .canceled
            }
            try expectEqual(try await store.cancel(id, reason: "again"), .alreadyFinished(.canceled), "a second cancel")
            try expect(process.exitStatus == nil, "the worker process keeps running after a cancel")
            try await process.waitUntilReady()
            process.send(SIGTERM)
            try expectEqual(try await process.waitForExit(), .exited(0), "the worker process after SIGTERM (\(process.errorOutput))")

            // Not started, unknown.
            let idle = try await store.enqueue(JobRequest(name: "conformance.idle")).id
            try expectEqual(try await store.cancel(idle, reason: "not needed"), .canceled, "cancel before start")
            try expectEqual(try await record(store, idle).message, "not needed", "the reason is kept")
            try expectEqual(try await store.cancel(JobID(987_654_321), reason: "?"), .notFound, "cancel of an unknown job")
        }
    }
}

extension JSONDecoder {
    static var iso8601: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
