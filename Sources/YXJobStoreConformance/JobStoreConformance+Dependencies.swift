import Foundation
import YXJobStore
@_spi(YXQueueInternals) import YXQueue

extension JobStoreConformance {
    /// A job waits until all its prerequisites succeeded; a chain runs in order; an unknown prerequisite
    /// refuses the whole enqueue; a succeeded prerequisite does not hold anyone back.
    public func dependencies() async throws {
        try await withStore { store in
            let name = "conformance.graph"
            let a = try await store.enqueue(JobRequest(name: name)).id
            let b = try await store.enqueue(JobRequest(name: name)).id
            let c = try await store.enqueue(JobRequest(name: name, options: JobOptions(dependencies: [a, b]))).id
            let d = try await store.enqueue(JobRequest(name: name, options: JobOptions(dependencies: [c]))).id
            try expectEqual(try await states(store, [c, d]), [.waiting, .waiting], "dependents before their prerequisites ran")
            let first = try await store.claim(
                ClaimRequest(owner: "w", names: .only([name]), limit: 10, leaseDuration: .seconds(30))
            )
            try expectEqual(Set(first.map(\.id)), [a, b], "only the jobs without prerequisites are claimed")
            let leases = Dictionary(uniqueKeysWithValues: first.map { ($0.id, $0.lease) })
            _ = try await store.complete([JobCompletion(lease: try unwrap(leases[a], "a"), outcome: .succeeded)])
            try expectEqual(try await record(store, c).state, .waiting, "c after a alone succeeded")
            _ = try await store.complete([JobCompletion(lease: try unwrap(leases[b], "b"), outcome: .succeeded)])
            try expectEqual(try await states(store, [c, d]), [.available, .waiting], "c and d after a and b succeeded")
            let third = try unwrap(try await claimOne(store, name, owner: "w"), "the claim of c")
            try expectEqual(third.id, c, "the third job claimed")
            _ = try await store.complete([JobCompletion(lease: third.lease, outcome: .succeeded)])
            let fourth = try unwrap(try await claimOne(store, name, owner: "w"), "the claim of d")
            try expectEqual(fourth.id, d, "the fourth job claimed")
            try expectEqual(try await record(store, d).dependencies, [c], "d's recorded prerequisites")
            try expectEqual(try await record(store, c).dependencies, [a, b], "c's recorded prerequisites")

            // A prerequisite that already succeeded.
            let e = try await store.enqueue(JobRequest(name: name, options: JobOptions(dependencies: [a]))).id
            try expectEqual(try await record(store, e).state, .available, "a job whose prerequisite already succeeded")

            // An unknown prerequisite refuses the whole batch.
            let before = try await store.status().total
            do {
                _ = try await store.enqueue([
                    JobRequest(name: name),
                    JobRequest(name: name, options: JobOptions(dependencies: [JobID(987_654_321)])),
                ])
                throw ConformanceError("an unknown prerequisite was accepted")
            } catch JobStoreError.unknownDependency(let unknown) {
                try expectEqual(unknown, JobID(987_654_321), "the unknown prerequisite")
            }
            try expectEqual(try await store.status().total, before, "jobs stored by the refused batch")

            // A worker runs a diamond in order.
            let order = Locked<[String]>([])
            var registry = JobRegistry()
            registry.register("conformance.diamond") { payload, _ in
                order.withLock { $0.append(String(decoding: payload, as: UTF8.self)) }
            }
            func job(_ label: String, _ after: [JobID]) async throws -> JobID {
                try await store.enqueue(
                    JobRequest(name: "conformance.diamond", payload: Data(label.utf8), options: JobOptions(dependencies: after))
                ).id
            }
            let top = try await job("top", [])
            let left = try await job("left", [top])
            let right = try await job("right", [top])
            let bottom = try await job("bottom", [left, right])
            let worker = startWorker(store, registry)
            try await waitUntil("the diamond ran") { try await store.job(bottom)?.state == .succeeded }
            try await worker.stop()
            let ran = order.withLock { $0 }
            try expectEqual(ran.first, "top", "the first job of the diamond")
            try expectEqual(ran.last, "bottom", "the last job of the diamond")
            try expectEqual(ran.count, 4, "jobs of the diamond that ran")
        }
    }

    /// When a prerequisite fails for good (or is canceled), every job that waits on it, directly or
    /// through others, is canceled without running; a job enqueued later on it is canceled at once.
    public func dependencyFailureCancelsDependents() async throws {
        try await withStore { store in
            let name = "conformance.doomed"
            let done = try await store.enqueue(JobRequest(name: "conformance.done")).id
            let doneClaim = try unwrap(try await claimOne(store, "conformance.done", owner: "w"), "the claim of done")
            _ = try await store.complete([JobCompletion(lease: doneClaim.lease, outcome: .succeeded)])

            let a = try await store.enqueue(JobRequest(name: name, options: JobOptions(retry: .never))).id
            let b = try await store.enqueue(JobRequest(name: name, options: JobOptions(dependencies: [a]))).id
            let c = try await store.enqueue(JobRequest(name: name, options: JobOptions(dependencies: [b]))).id
            let e = try await store.enqueue(JobRequest(name: name, options: JobOptions(dependencies: [a, done]))).id
            var registry = JobRegistry()
            registry.register(name) { _, _ in throw ConformanceError("a fails") }
            let worker = startWorker(store, registry)
            try await waitUntil("the prerequisite failed and its dependents were canceled") {
                try await states(store, [a, b, c, e]) == [.failed, .canceled, .canceled, .canceled]
            }
            try await worker.stop()
            for id in [b, c, e] {
                let record = try await record(store, id)
                try expectEqual(record.attempt, 0, "attempts of canceled dependent \(id)")
                try expect(
                    record.message?.contains("prerequisite") == true,
                    "dependent \(id) says why: \(record.message ?? "")"
                )
            }
            let late = try await store.enqueue(JobRequest(name: name, options: JobOptions(dependencies: [a]))).id
            try expectEqual(try await record(store, late).state, .canceled, "a job enqueued on a failed prerequisite")

            // A canceled prerequisite cancels its dependents too.
            let p = try await store.enqueue(JobRequest(name: "conformance.idle")).id
            let q = try await store.enqueue(JobRequest(name: "conformance.idle", options: JobOptions(dependencies: [p]))).id
            try expectEqual(try await store.cancel(p, reason: "not needed"), .canceled, "cancel of a job not started")
            try expectEqual(try await record(store, q).state, .canceled, "the dependent of a canceled job")
        }
    }
}
