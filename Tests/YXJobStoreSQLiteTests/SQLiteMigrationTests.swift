import Foundation
import GRDB
import GRDBSQLite
import XCTest
import YXJobStore
import YXJobStoreConformance
@testable import YXJobStoreSQLite
import YXQueue

/// A file written by the first version of the store opens with this one: its schema is migrated, and its
/// jobs keep what they meant.
final class SQLiteMigrationTests: XCTestCase {
    /// Found by a helper's review: `yxdownload status --queue app.db` wrote the store's tables into a
    /// user's own database. A database with other tables and no store is refused, and left as it was.
    func testADatabaseOfSomethingElseIsRefusedAndLeftAlone() async throws {
        let folder = try temporaryFolder("yxjobstore-foreign")
        let path = folder.appendingPathComponent("app.db").path
        let queue = try DatabaseQueue(path: path)
        try await queue.writeWithoutTransaction { db in try db.run("CREATE TABLE users (id INTEGER, name TEXT)") }
        try queue.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))

        do {
            let store = try await SQLiteJobStore.open(path: path)
            try? await store.close()
            XCTFail("a foreign database was opened as a store")
        } catch let error as JobStoreError {
            XCTAssertEqual(
                error, .invalidLocation("the database holds other tables (users) and no job store; it is left as it was"))
        }
        let check = try DatabaseQueue(path: path)
        let tables = try await check.read { db in
            try db.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").map { try $0.string("name") }
        }
        try check.close()
        XCTAssertEqual(tables, ["users"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), before, "not a byte changed (its journal mode included)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-wal"))

        // A new store's files are its owner's alone (payloads may hold credentials).
        let fresh = folder.appendingPathComponent("fresh.sqlite").path
        let made = try await SQLiteJobStore.open(path: fresh)
        try await made.close()
        for file in [fresh, fresh + "-wal", fresh + "-shm"] where FileManager.default.fileExists(atPath: file) {
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            XCTAssertEqual(mode, 0o600, file)
        }

        // An empty file is a new store, as before.
        let empty = folder.appendingPathComponent("empty.sqlite").path
        XCTAssertTrue(FileManager.default.createFile(atPath: empty, contents: Data()))
        let store = try await SQLiteJobStore.open(path: empty)
        try await store.close()
    }

    func testAVersionOneFileIsMigrated() async throws {
        let folder = try temporaryFolder("yxjobstore-migrate")
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
            try await MigratedStoreCheck.run(store)
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

/// A store at the latest schema, or at a newer one, is only read when opened: another process's write
/// transaction (a long enqueue) does not make the open wait for its lock.
final class SQLiteOpenWhileWrittenTests: XCTestCase {
    func testOpeningReadsOnlyWhileAnotherConnectionWrites() async throws {
        let folder = try temporaryFolder("yxjobstore-open")
        let path = folder.appendingPathComponent("jobs.sqlite").path
        try await SQLiteJobStore.open(path: path).close()

        // Another connection, held open in a transaction across calls (as another process would).
        var other: OpaquePointer?
        XCTAssertEqual(sqlite3_open_v2(path, &other, SQLITE_OPEN_READWRITE, nil), SQLITE_OK)
        defer { sqlite3_close(other) }
        func holdingTheWriteLock(_ body: () async throws -> Void) async throws {
            XCTAssertEqual(sqlite3_exec(other, "BEGIN IMMEDIATE", nil, nil, nil), SQLITE_OK)
            defer { sqlite3_exec(other, "ROLLBACK", nil, nil, nil) }
            try await body()
        }
        var configuration = SQLiteJobStore.Configuration()
        configuration.busyTimeout = .seconds(30)  // an open that waited for the lock would take 30 s
        let started = ContinuousClock.now
        try await holdingTheWriteLock {
            let store = try await SQLiteJobStore.open(path: path, configuration: configuration)
            _ = try await store.status()
            try await store.close()
        }
        // A store of a newer library says so at once, lock or not (found by a review: it waited out the
        // busy timeout, then said "database is locked").
        XCTAssertEqual(
            sqlite3_exec(other, "UPDATE store_meta SET value = value + 1 WHERE key = 'schema_version'", nil, nil, nil), SQLITE_OK)
        try await holdingTheWriteLock {
            do {
                _ = try await SQLiteJobStore.open(path: path, configuration: configuration)
                XCTFail("a store of a newer schema opened")
            } catch JobStoreError.schemaTooNew {
            }
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(25), "an open waited for the write lock")
    }
}

extension XCTestCase {
    /// A new folder for one test, removed when the test ends.
    fileprivate func temporaryFolder(_ prefix: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
        return folder
    }
}
