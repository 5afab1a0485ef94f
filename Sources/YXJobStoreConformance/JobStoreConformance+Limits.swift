import Foundation
import YXJobStore
@_spi(YXQueueInternals) import YXQueue

extension JobStoreConformance {
    /// A limit set on the store holds across every claimer: many claims at once, from several store
    /// instances, take exactly the limit; workers on several instances never run more together; jobs of
    /// other keys are not held back.
    public func globalLimitUnderContention() async throws {
        try await withStore { store in
            let name = "conformance.limited"
            try await store.setConcurrencyLimit(3, forKey: "host-x")
            try expectEqual(try await store.concurrencyLimits()["host-x"], 3, "the limit read back")
            _ = try await store.enqueue(
                (0..<20).map { _ in JobRequest(name: name, options: JobOptions(concurrencyKey: "host-x")) }
                    + (0..<5).map { _ in JobRequest(name: name, options: JobOptions(concurrencyKey: "host-y")) }
            )

            // Claims at once from 4 instances × 3 tasks, released together.
            let instances = try await (0..<4).asyncMap { _ in try await harness.open() }
            let start = Gate()
            let claimed = try await withThrowingTaskGroup(of: [ClaimedJob].self) { group in
                for index in 0..<12 {
                    let instance = instances[index % instances.count]
                    group.addTask {
                        await start.wait()
                        return try await instance.claim(
                            ClaimRequest(owner: "claimer-\(index)", names: .only([name]), limit: 5, leaseDuration: .seconds(60))
                        )
                    }
                }
                start.open()
                var all: [ClaimedJob] = []
                for try await jobs in group { all += jobs }
                return all
            }
            try expectEqual(claimed.filter { $0.concurrencyKey == "host-x" }.count, 3, "host-x jobs claimed together")
            try expectEqual(claimed.filter { $0.concurrencyKey == "host-y" }.count, 5, "host-y jobs (no limit) claimed")
            try expectEqual(
                try await store.status().limits,
                [JobStoreStatus.LimitSummary(key: "host-x", limit: 3, running: 3)],
                "the limit in the status"
            )
            // One ends: exactly one more may start.
            let oneX = try unwrap(claimed.first { $0.concurrencyKey == "host-x" }, "a host-x claim")
            _ = try await store.complete([JobCompletion(lease: oneX.lease, outcome: .succeeded)])
            var more: [ClaimedJob] = []
            for instance in instances {
                more += try await instance.claim(
                    ClaimRequest(owner: "late", names: .only([name]), limit: 5, leaseDuration: .seconds(60))
                )
            }
            try expectEqual(more.count, 1, "claims after one host-x job ended")
            // Give everything back for the workers below.
            _ = try await store.complete((claimed + more).filter { $0.id != oneX.id }.map {
                JobCompletion(lease: $0.lease, outcome: .succeeded)
            })

            // Workers on 3 instances run 24 more jobs: never more than 3 at once.
            try await store.setConcurrencyLimit(3, forKey: "host-z")
            let ids = try await store.enqueue(
                (0..<24).map { _ in JobRequest(name: "conformance.busy", options: JobOptions(concurrencyKey: "host-z")) }
            ).map(\.id)
            let running = Locked((now: 0, most: 0))
            var registry = JobRegistry()
            registry.register("conformance.busy") { _, _ in
                running.withLock { state in
                    state.now += 1
                    state.most = max(state.most, state.now)
                }
                try? await Task.sleep(for: .milliseconds(30))
                running.withLock { $0.now -= 1 }
            }
            let workers = instances.prefix(3).map { startWorker($0, registry) }
            try await waitUntil("the 24 limited jobs succeed") {
                try await states(store, ids).allSatisfy { $0 == .succeeded }
            }
            for worker in workers { try await worker.stop() }
            for instance in instances { try await instance.close() }
            let most = running.withLock { $0.most }
            try expect(most <= 3, "at most 3 host-z jobs ran at once; \(most) did")
            try await store.setConcurrencyLimit(nil, forKey: "host-z")
            try expectEqual(try await store.concurrencyLimits()["host-z"], nil, "the removed limit")
        }
    }

    /// Parameters that do not decode, or a name no handler has, end the job `discarded` with the reason;
    /// the worker goes on with the next jobs.
    public func undecodableJobDiscarded() async throws {
        struct Point: Codable, Sendable {
            var x: Int
            var y: Int
        }
        try await withStore { store in
            let bad = try await store.enqueue(JobRequest(name: "conformance.typed", payload: Data("not json".utf8))).id
            let good = try await store.enqueue(try JobRequest(name: "conformance.typed", parameters: Point(x: 1, y: 2))).id
            let stranger = try await store.enqueue(JobRequest(name: "conformance.nobody-knows")).id
            let sums = Locked<[Int]>([])
            var registry = JobRegistry()
            registry.register("conformance.typed", parameters: Point.self) { point, _ in
                sums.withLock { $0.append(point.x + point.y) }
            }
            var configuration = Self.testConfiguration()
            configuration.discardUnknownJobs = true
            let worker = startWorker(store, registry, configuration)
            try await waitUntil("all three jobs ended") {
                try await states(store, [bad, good, stranger]).allSatisfy { $0?.isTerminal == true }
            }
            let after = try await store.enqueue(try JobRequest(name: "conformance.typed", parameters: Point(x: 3, y: 4))).id
            try await waitUntil("the worker goes on") { try await store.job(after)?.state == .succeeded }
            try await worker.stop()
            let badRecord = try await record(store, bad)
            try expectEqual(badRecord.state, .discarded, "the job with undecodable parameters")
            try expect(badRecord.message?.contains("do not decode") == true, "the reason: \(badRecord.message ?? "")")
            try expectEqual(badRecord.attempt, 1, "attempts of the discarded job (no retry)")
            try expectEqual(try await record(store, good).state, .succeeded, "the job with good parameters")
            let strangerRecord = try await record(store, stranger)
            try expectEqual(strangerRecord.state, .discarded, "the job nobody knows")
            try expect(strangerRecord.message?.contains("no handler") == true, "the reason: \(strangerRecord.message ?? "")")
            try expectEqual(sums.withLock { $0 }.sorted(), [3, 7], "the handler ran for the good jobs only")
        }
    }
}
