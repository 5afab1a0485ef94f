import Foundation
import GRDB
import XCTest
import YXJobStore
@testable import YXJobStoreSQLite
import YXQueue

/// A file written by the first version of the store opens with this one: its schema is migrated, and its
/// jobs keep what they meant.
final class SQLiteMigrationTests: XCTestCase {
    func testAVersionOneFileIsMigrated() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("yxjobstore-migrate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("jobs.sqlite").path

        // The file as version 1 left it, with one job waiting.
        let queue = try DatabaseQueue(path: path)
        try await queue.writeWithoutTransaction { db in
            try db.run("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID")
            for statement in SQLiteSchema.migrations[0] {
                try db.run(statement)
            }
            try db.run("INSERT INTO store_meta (key, value) VALUES ('schema_version', 1)")
            let now = SQLiteData(SQLiteTime.now)
            try db.run(
                """
                INSERT INTO jobs (name, payload, state, concurrency_key, run_at, created_at, max_attempts,
                    retry_initial_ms, retry_max_ms, retry_jitter)
                VALUES ('old', x'7b7d', 'available', 'old', ?, ?, 3, 500, 60000, 0.25)
                """,
                [now, now]
            )
        }
        try queue.close()

        let store = try await SQLiteJobStore.open(path: path)
        do {
            let found = try await store.job(JobID(1))
            let old = try XCTUnwrap(found)
            XCTAssertEqual(old.retry, RetryPolicy(retries: 2, initialDelay: 0.5, maxDelay: 60, jitter: 0.25, scope: .allErrors))
            XCTAssertNil(old.result)
            // The migrated file takes the new columns: a result, a retry scope.
            var options = JobOptions()
            options.retry = RetryPolicy(retries: 1, scope: .transientErrors)
            let new = try await store.enqueue(JobRequest(name: "new", options: options)).id
            let newScope = try await store.job(new)?.retry.scope
            XCTAssertEqual(newScope, .transientErrors)
            let claimed = try await store.claim(
                ClaimRequest(owner: "w", names: .only(["old"]), limit: 1, leaseDuration: .seconds(30))
            )
            let lease = try XCTUnwrap(claimed.first?.lease)
            let refused = try await store.complete([
                JobCompletion(lease: lease, outcome: .succeeded, result: Data("42".utf8))
            ])
            XCTAssertEqual(refused, [])
            let result = try await store.job(JobID(1))?.decodedResult(as: Int.self)
            XCTAssertEqual(result, 42)
            try await store.close()
        } catch {
            try? await store.close()
            throw error
        }
        // Opened again: nothing to migrate.
        let again = try await SQLiteJobStore.open(path: path)
        let state = try await again.job(JobID(1))?.state
        XCTAssertEqual(state, .succeeded)
        try await again.close()
    }
}
