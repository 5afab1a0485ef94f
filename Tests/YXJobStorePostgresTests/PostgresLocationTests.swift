import XCTest
import YXJobStore
import YXJobStorePostgres

/// URL parsing needs no server.
final class PostgresLocationTests: XCTestCase {
    func testAFullURL() throws {
        let location = try PostgresLocation(url: "postgres://app:s%40cret@db.internal:6543/jobs?sslmode=require")
        XCTAssertEqual(location.host, "db.internal")
        XCTAssertEqual(location.port, 6543)
        XCTAssertEqual(location.username, "app")
        XCTAssertEqual(location.password, "s@cret")
        XCTAssertEqual(location.database, "jobs")
        XCTAssertEqual(location.tls, .require)
        XCTAssertNil(location.socketDirectory)
    }

    func testDefaultsAndASocketFolder() throws {
        let plain = try PostgresLocation(url: "postgresql://localhost")
        XCTAssertEqual(plain.port, 5432)
        XCTAssertEqual(plain.username, "postgres")
        XCTAssertNil(plain.database)
        XCTAssertEqual(plain.tls, .prefer)
        let socket = try PostgresLocation(url: "postgres://me@/jobs?host=/var/run/postgresql&sslmode=disable")
        XCTAssertEqual(socket.socketDirectory, "/var/run/postgresql")
        XCTAssertEqual(socket.database, "jobs")
        XCTAssertEqual(socket.tls, .disable)
    }

    func testWhatIsNotAPostgresURL() {
        XCTAssertThrowsError(try PostgresLocation(url: "/var/lib/jobs.sqlite"))
        XCTAssertThrowsError(try PostgresLocation(url: "postgres://h/db?sslmode=sometimes"))
        XCTAssertTrue(PostgresLocation.isPostgresURL("PostgreSQL://h/db"))
        XCTAssertFalse(PostgresLocation.isPostgresURL("jobs.sqlite"))
    }

    func testASchemaNameMustBePlain() async {
        do {
            _ = try await PostgresJobStore.open(
                url: "postgres://127.0.0.1:1/x",
                configuration: PostgresJobStore.Configuration(schema: "a; DROP TABLE x")
            )
            XCTFail("a schema name with punctuation was accepted")
        } catch {
            XCTAssertEqual(error as? JobStoreError, .invalidArgument("schema name \"a; DROP TABLE x\" (letters, digits, _ only)"))
        }
    }
}
