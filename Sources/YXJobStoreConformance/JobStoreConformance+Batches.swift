import Foundation
import YXJobStore

extension JobStoreConformance {
    /// `enqueue(batches:)` reads the batches one at a time and stores them in one transaction: unique keys
    /// hold across batches, the counts add up, and when the batches throw part-way (a list that could
    /// not be read to its end) nothing of them is stored. Joins are shown to the batches' join check,
    /// which can refuse them.
    public func enqueueInBatches() async throws {
        try await withStore { store in
            func request(_ name: String, _ key: String) -> JobRequest {
                JobRequest(name: name, options: JobOptions(uniqueKey: key, onDuplicate: .join))
            }
            var given: [[JobRequest]] = [
                [request("conformance.batch", "b1"), request("conformance.batch", "b2")],
                [],
                [request("conformance.batch", "b1"), request("conformance.batch", "b3")],
            ]
            let batches = JobRequestBatches { given.isEmpty ? nil : given.removeFirst() }
            let counts = try await store.enqueue(batches: batches)
            try expectEqual(counts, EnqueueCounts(enqueued: 3, joined: 1), "counts of three batches, one key repeated")
            let stored = try await store.jobs(JobQuery(names: ["conformance.batch"]))
            try expectEqual(stored.count, 3, "jobs stored from the batches")
            try expect(try await store.enqueue(batches: batches) == EnqueueCounts(), "batches are read once")

            // One batch in memory at a time: each payload counts itself live until the store lets go
            // of it. (A store that gathered the batches first would hold them all.)
            let live = LiveCount()
            var made = 0
            let counted = JobRequestBatches {
                try expect(live.value <= 1, "batches alive when the next one is asked for: \(live.value)")
                guard made < 6 else { return nil }
                made += 1
                live.change(by: 1)
                let bytes = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 8)
                bytes.initializeMemory(as: UInt8.self, repeating: UInt8(ascii: " "), count: 64)
                let payload = Data(bytesNoCopy: bytes, count: 64, deallocator: .custom { pointer, _ in
                    pointer.deallocate()
                    live.change(by: -1)
                })
                return (0..<20).map {
                    JobRequest(name: "conformance.streamed", payload: payload, options: JobOptions(uniqueKey: "s\(made)-\($0)"))
                }
            }
            try expectEqual(try await store.enqueue(batches: counted), EnqueueCounts(enqueued: 120), "streamed batches")
            try expectEqual(live.value, 0, "batch payloads still alive after the enqueue")

            // Limits go in with the jobs.
            let limited = JobRequestBatches([request("conformance.limited", "l1")], concurrencyLimits: ["conformance.key": 3])
            try expectEqual(try await store.enqueue(batches: limited), EnqueueCounts(enqueued: 1), "a batch with a limit")
            try expectEqual(try await store.concurrencyLimits()["conformance.key"], 3, "the limit set with the jobs")

            // The third batch throws: the two before it are not stored either, nor the limit given with them.
            struct ListEnded: Error {}
            var calls = 0
            let failing = JobRequestBatches(concurrencyLimits: ["conformance.unset": 2, "conformance.key": 7]) {
                calls += 1
                if calls == 3 { throw ListEnded() }
                return (0..<50).map { request("conformance.unstored", "u\(calls)-\($0)") }
            }
            do {
                let counts = try await store.enqueue(batches: failing)
                throw ConformanceError("an enqueue whose batches threw returned \(counts)")
            } catch is ListEnded {
            }
            let unstored = try await store.jobs(JobQuery(names: ["conformance.unstored"]))
            try expectEqual(unstored.count, 0, "jobs stored by an enqueue whose third batch threw")
            let limits = try await store.concurrencyLimits()
            try expect(limits["conformance.unset"] == nil, "a limit set by an enqueue that stored nothing")
            try expectEqual(limits["conformance.key"], 3, "a limit changed by an enqueue that stored nothing")

            // Joins are shown to the check with the live job's parameters, a batch's before the next batch
            // is asked for; a check that throws stores nothing.
            func keyed(_ key: String, _ payload: String) -> JobRequest {
                JobRequest(name: "conformance.joins", payload: Data(payload.utf8), options: JobOptions(uniqueKey: key, onDuplicate: .join))
            }
            let held = try await store.enqueue(keyed("j1", "held"))
            var steps: [String] = []
            var joinBatches: [[JobRequest]] = [[keyed("j2", "new"), keyed("j1", "again")], [keyed("j2", "later")]]
            let checkedJoins = JobRequestBatches(checkingJoins: { joined in
                steps.append("\(String(decoding: joined.request.payload, as: UTF8.self)) joined \(String(decoding: joined.existingPayload, as: UTF8.self))")
            }) {
                steps.append("next")
                return joinBatches.isEmpty ? nil : joinBatches.removeFirst()
            }
            try expectEqual(try await store.enqueue(batches: checkedJoins), EnqueueCounts(enqueued: 1, joined: 2), "checked joins")
            try expectEqual(steps, ["next", "again joined held", "next", "later joined new", "next"], "join checks, in order")
            var conflicting: [[JobRequest]] = [[keyed("j3", "new"), keyed("j1", "other")]]
            struct Conflict: Error {}
            var refusedJoin: JoinedRequest?
            let refusing = JobRequestBatches(checkingJoins: { joined in
                refusedJoin = joined
                if joined.existingPayload != joined.request.payload { throw Conflict() }
            }) { conflicting.isEmpty ? nil : conflicting.removeFirst() }
            do {
                let counts = try await store.enqueue(batches: refusing)
                throw ConformanceError("an enqueue whose join check threw returned \(counts)")
            } catch is Conflict {
            }
            try expectEqual(refusedJoin?.existing, held.id, "the job a refused request joined")
            let joinJobs = try await store.jobs(JobQuery(names: ["conformance.joins"]))
            try expectEqual(joinJobs.map { String(decoding: $0.payload, as: UTF8.self) }, ["held", "new"], "jobs after a refused join")

            // An invalid request in a later batch stores nothing either.
            var invalid: [[JobRequest]] = [
                [request("conformance.invalid", "i1")],
                [JobRequest(name: "", options: JobOptions())],
            ]
            do {
                _ = try await store.enqueue(batches: JobRequestBatches { invalid.isEmpty ? nil : invalid.removeFirst() })
                throw ConformanceError("a batch with an empty job name was accepted")
            } catch JobStoreError.invalidArgument {
            }
            let invalidStored = try await store.jobs(JobQuery(names: ["conformance.invalid"]))
            try expectEqual(invalidStored.count, 0, "jobs stored by an enqueue with an invalid later batch")
        }
    }
}

/// How many batches are alive, changed from whatever thread frees them.
private final class LiveCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    var value: Int { lock.withLock { count } }

    func change(by delta: Int) { lock.withLock { count += delta } }
}
