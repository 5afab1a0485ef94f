import Foundation
import YXJobStore

extension JobStoreConformance {
    /// An outcome written with a claim (``JobStore/complete(_:thenClaim:)``) is recorded before the claim
    /// looks: the claim takes the limit slot the ended job freed and the dependent it released. A stale
    /// attempt's outcome is refused and the claim still happens; no outcomes is a plain claim.
    public func outcomesThenClaim() async throws {
        try await withStore { store in
            let name = "conformance.carried"
            try await store.setConcurrencyLimit(1, forKey: "carried-key")
            let keyed = JobOptions(concurrencyKey: "carried-key")
            let a = try await store.enqueue(JobRequest(name: name, options: keyed)).id
            let b = try await store.enqueue(JobRequest(name: name, options: keyed)).id
            let c = try await store.enqueue(JobRequest(name: name, options: JobOptions(dependencies: [a]))).id
            let request = ClaimRequest(owner: "w", names: .only([name]), limit: 5, leaseDuration: .seconds(30))

            let first = try await store.complete([], thenClaim: request)
            try expectEqual(first.claimed.map(\.id), [a], "no outcomes: a plain claim (b waits for the limit, c for a)")
            try expectEqual(first.refused, [], "refusals without outcomes")
            try expect(first.claimError == nil, "a claim error without outcomes")
            let leaseA = first.claimed[0].lease

            let second = try await store.complete([JobCompletion(lease: leaseA, outcome: .succeeded)], thenClaim: request)
            try expectEqual(second.refused, [], "refusals of a's outcome")
            try expect(second.claimError == nil, "a claim error after a's outcome")
            try expectEqual(Set(second.claimed.map(\.id)), [b, c], "the claim after a's outcome: its limit slot and its dependent")
            try expectEqual(try await record(store, a).state, .succeeded, "a after its outcome")
            try expectEqual(
                try await store.status().limits,
                [JobStoreStatus.LimitSummary(key: "carried-key", limit: 1, running: 1)],
                "the limit after the claim"
            )

            // A's attempt again: refused; nothing is left to claim.
            let third = try await store.complete([JobCompletion(lease: leaseA, outcome: .failed(error: "late"))], thenClaim: request)
            try expectEqual(third.refused, [leaseA], "a stale outcome's refusal")
            try expectEqual(third.claimed.count, 0, "jobs claimed when none is ready")
            try expectEqual(try await record(store, a).state, .succeeded, "a after a stale outcome")

            _ = try await store.complete(second.claimed.map { JobCompletion(lease: $0.lease, outcome: .succeeded) })
            try expectEqual(try await states(store, [b, c]), [.succeeded, .succeeded], "b and c at the end")
            try await store.setConcurrencyLimit(nil, forKey: "carried-key")
        }
    }
}
