import Foundation
import YXJobStore

extension JobStoreConformance {
    /// A unique key is held by one live job at a time: a second enqueue is refused or joins it, as the
    /// caller chose, also within one batch and from several store instances at once; once the job
    /// ended, the key is free again.
    public func uniqueKeys() async throws {
        try await withStore { store in
            func request(_ key: String, _ policy: DuplicatePolicy) -> JobRequest {
                JobRequest(name: "conformance.unique", options: JobOptions(uniqueKey: key, onDuplicate: policy))
            }
            let first = try await store.enqueue(request("k1", .refuse))
            guard case .enqueued(let id) = first else { throw ConformanceError("the first enqueue: \(first)") }
            try expectEqual(try await store.enqueue(request("k1", .refuse)), .refused(existing: id), "second, refuse")
            try expectEqual(try await store.enqueue(request("k1", .join)), .joined(existing: id), "second, join")

            let batch = try await store.enqueue([request("k2", .refuse), request("k2", .join), request("k3", .refuse)])
            guard case .enqueued(let k2) = batch[0], case .enqueued = batch[2] else {
                throw ConformanceError("a batch with a repeated key: \(batch)")
            }
            try expectEqual(batch[1], .joined(existing: k2), "a repeated key within one batch")

            // Once the holder ended, the key is free.
            let claimed = try await store.claim(
                ClaimRequest(owner: "w", names: .only(["conformance.unique"]), limit: 10, leaseDuration: .seconds(30))
            )
            _ = try await store.complete(claimed.map { JobCompletion(lease: $0.lease, outcome: .succeeded) })
            guard case .enqueued(let again) = try await store.enqueue(request("k1", .refuse)), again != id else {
                throw ConformanceError("k1 should be free once its job succeeded")
            }

            // Many enqueuers at once, each with its own store instance: the database lets one through.
            let instances = try await (0..<4).asyncMap { _ in try await harness.open() }
            let results = try await withThrowingTaskGroup(of: EnqueueResult.self) { group in
                for index in 0..<16 {
                    let instance = instances[index % instances.count]
                    group.addTask { try await instance.enqueue(request("contended", .join)) }
                }
                var results: [EnqueueResult] = []
                for try await result in group { results.append(result) }
                return results
            }
            for instance in instances { try await instance.close() }
            let enqueued = results.filter(\.isNew)
            try expectEqual(enqueued.count, 1, "concurrent enqueues that stored a job")
            try expect(Set(results.map(\.id)).count == 1, "every concurrent enqueue follows the one job: \(results)")
        }
    }
}

extension Sequence {
    /// `map` with an async transform, in order.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self {
            result.append(try await transform(element))
        }
        return result
    }
}
