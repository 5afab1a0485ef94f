import Foundation
import YXJobStore
import YXQueue

/// What both stores' migration tests check once a store opened a database written by version 1 of its
/// schema, with one job `old` waiting in it (retries 2, 0.5 s to 60 s, jitter 0.25, payload `{}`).
public enum MigratedStoreCheck {
    /// The old job keeps what it meant (every error retried, no result); a new job takes the new columns
    /// (a retry scope); the old job is claimed and its result recorded.
    public static func run(_ store: any JobStore) async throws {
        let found = try await store.jobs(JobQuery(names: ["old"])).first
        let old = try unwrap(found, "the job of version 1")
        try expectEqual(
            old.retry,
            RetryPolicy(retries: 2, initialDelay: 0.5, maxDelay: 60, jitter: 0.25, scope: .allErrors),
            "the old job's retry policy"
        )
        try expectEqual(old.payload, Data("{}".utf8), "the old job's payload")
        try expect(old.result == nil, "the old job has no result")
        var options = JobOptions()
        options.retry = RetryPolicy(retries: 1, scope: .transientErrors)
        let new = try await store.enqueue(JobRequest(name: "new", options: options)).id
        let newScope = try await store.job(new)?.retry.scope
        try expectEqual(newScope, .transientErrors, "a new job's retry scope")
        let claimed = try await store.claim(
            ClaimRequest(owner: "w", names: .only(["old"]), limit: 1, leaseDuration: .seconds(30))
        )
        let lease = try unwrap(claimed.first?.lease, "the old job's claim")
        let refused = try await store.complete([
            JobCompletion(lease: lease, outcome: .succeeded, result: Data("42".utf8))
        ])
        try expectEqual(refused, [], "leases refused")
        let result = try await store.job(old.id)?.decodedResult(as: Int.self)
        try expectEqual(result, 42, "the old job's result")
    }
}
