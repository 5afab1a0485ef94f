import Foundation
import Logging
import PostgresNIO
import XCTest
import YXJobStore
@testable import YXJobStorePostgres
import YXQueue

/// A schema written by the first version of the store opens with this one: it is migrated, and its jobs
/// keep what they meant.
final class PostgresMigrationTests: XCTestCase {
    func testAVersionOneSchemaIsMigrated() async throws {
        let url = try PostgresTestDatabase.url()
        let schema = "m_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        let quoted = "\"\(schema)\""
        var logger = Logger(label: "migration")
        logger.logLevel = .critical

        // The schema as version 1 left it, with one job waiting.
        let connection = try await PostgresConnection.connect(
            configuration: try PostgresLocation(url: url).connectionConfiguration(), id: 1, logger: logger
        )
        do {
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(quoted)"), logger: logger)
            try await connection.query(
                PostgresQuery(unsafeSQL: "CREATE TABLE \(quoted).store_meta (key text PRIMARY KEY, value integer NOT NULL)"),
                logger: logger
            )
            for statement in PostgresSchema.migrations[0] {
                let sql = statement.replacingOccurrences(of: "{s}", with: quoted)
                try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
            }
            try await connection.query(
                PostgresQuery(unsafeSQL: "INSERT INTO \(quoted).store_meta (key, value) VALUES ('schema_version', 1)"),
                logger: logger
            )
            try await connection.query(
                PostgresQuery(
                    unsafeSQL: """
                        INSERT INTO \(quoted).jobs (name, payload, state, concurrency_key, run_at, max_attempts,
                            retry_initial_ms, retry_max_ms, retry_jitter)
                        VALUES ('old', '\\x7b7d', 'available', 'old', now(), 3, 500, 60000, 0.25)
                        """
                ),
                logger: logger
            )
            try await connection.close()
        } catch {
            try? await connection.close()
            throw error
        }

        var configuration = PostgresJobStore.Configuration()
        configuration.schema = schema
        let store = try await PostgresJobStore.open(url: url, configuration: configuration, logger: logger)
        do {
            let found = try await store.jobs(JobQuery(names: ["old"])).first
            let old = try XCTUnwrap(found)
            XCTAssertEqual(old.retry, RetryPolicy(retries: 2, initialDelay: 0.5, maxDelay: 60, jitter: 0.25, scope: .allErrors))
            XCTAssertEqual(old.payload, Data("{}".utf8))
            XCTAssertNil(old.result)
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
            let result = try await store.job(old.id)?.decodedResult(as: Int.self)
            XCTAssertEqual(result, 42)
            try await store.dropSchema()
        } catch {
            try? await store.dropSchema()
            throw error
        }
    }
}
