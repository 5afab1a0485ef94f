import Foundation
import Logging
import PostgresNIO
import XCTest
import YXJobStore
import YXJobStoreConformance
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
            try await MigratedStoreCheck.run(store)
            try await store.dropSchema()
        } catch {
            try? await store.dropSchema()
            throw error
        }
    }
}
