import Foundation
import Logging
import PostgresNIO
import XCTest
import YXJobStore
import YXJobStoreConformance
import YXJobStorePostgres

/// The server `scripts/test` starts (`YXQUEUE_TEST_POSTGRES_URL`), and a schema of its own per test.
enum PostgresTestDatabase {
    static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["YXQUEUE_TEST_POSTGRES_URL"], !url.isEmpty else {
            throw XCTSkip(
                "PostgreSQL tests need a server: run scripts/test (it starts a throwaway one), or set "
                    + "YXQUEUE_TEST_POSTGRES_URL=postgres://user@host:port/database"
            )
        }
        return url
    }

    /// A harness on a new schema; `cleanup` drops it.
    static func harness(logFolder: URL) throws -> JobStoreHarness {
        let url = try url()
        let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        var configuration = PostgresJobStore.Configuration()
        configuration.schema = schema
        configuration.maximumConnections = 6
        configuration.queryTimeout = testQueryTimeout
        let opening = configuration
        return JobStoreHarness(
            storeName: "PostgreSQL",
            workerArguments: ["--store", url, "--schema", schema],
            open: { try await PostgresJobStore.open(url: url, configuration: opening) },
            cleanup: { try await dropSchema(schema, url: url) }
        )
    }

    /// Longer than the store's default of 10 s: on a loaded machine (a sanitizer build, or two suites
    /// sharing the server and two cores) a statement, or the schema's drop behind the backends of a
    /// killed worker, took more than 10 s once (AddressSanitizer run of 2026-11-24, beside a normal run).
    static let testQueryTimeout: Duration = .seconds(60)

    static func dropSchema(_ schema: String, url: String) async throws {
        var configuration = PostgresJobStore.Configuration()
        configuration.schema = schema
        configuration.queryTimeout = testQueryTimeout
        configuration.listensForChanges = false
        try await PostgresJobStore.open(url: url, configuration: configuration).dropSchema()
    }

    /// Terminates every other backend of the server (the store's pool and listener among them).
    static func dropOtherConnections(url: String) async throws {
        let client = PostgresClient(configuration: try PostgresLocation(url: url).clientConfiguration())
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            try await client.query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'",
                logger: Logger(label: "test")
            )
            group.cancelAll()
        }
    }
}
