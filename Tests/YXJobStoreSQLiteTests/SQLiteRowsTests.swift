import Foundation
import GRDB
import XCTest
@testable import YXJobStoreSQLite

/// The store's own binding and row reading (`Database.rows`), on a real SQLite file: every kind of value
/// comes back as it went in, and errors are errors, with the statement usable again after one.
final class SQLiteRowsTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("yxjobstore-rows-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: folder)
    }

    private func queue() throws -> DatabaseQueue {
        try DatabaseQueue(path: folder.appendingPathComponent("rows.sqlite").path)
    }

    func testEveryKindOfValueRoundTrips() throws {
        let queue = try queue()
        defer { try? queue.close() }
        let blob = Data((0..<300).map { UInt8($0 % 256) })
        let text = "Grüße, 世界 — \u{1F600}, a NUL: \u{0} and after"
        for prepared in [false, true, true] {
            let rows = try queue.writeWithoutTransaction { db in
                try db.rows(
                    "SELECT ? AS i, ? AS f, ? AS t, ? AS b, ? AS e, ? AS n, ? AS big, ? AS s",
                    [.integer(-42), .float(0.25), .text(text), .blob(blob), .blob(Data()), .null, .integer(Int.max), .text("")],
                    prepared: prepared
                )
            }
            XCTAssertEqual(rows.count, 1)
            let row = try XCTUnwrap(rows.first)
            XCTAssertEqual(try row.int("i"), -42)
            XCTAssertEqual(try row.double("f"), 0.25)
            XCTAssertEqual(try row.string("t"), text)
            XCTAssertEqual(row.data("b"), blob)
            XCTAssertEqual(row.optionalData("e"), Data(), "an empty blob is not NULL")
            XCTAssertNil(row.optionalData("n"))
            XCTAssertNil(row.optionalInt64("n"))
            XCTAssertEqual(try row.int("big"), Int.max)
            XCTAssertEqual(try row.string("s"), "")
            XCTAssertThrowsError(try row.int("missing"), "a column the statement does not have")
            XCTAssertEqual(try row.string("i"), "-42", "an integer read as text, as SQLite converts it")
        }
    }

    func testErrorsAreThrownAndThePreparedStatementWorksAfterOne() throws {
        let queue = try queue()
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in
            try db.run("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
            let insert = "INSERT INTO t (id, name) VALUES (?, ?) RETURNING id"
            XCTAssertEqual(try db.rows(insert, [.integer(1), .text("a")], prepared: true).count, 1)
            XCTAssertThrowsError(try db.rows(insert, [.integer(1), .text("again")], prepared: true)) { error in
                let databaseError = error as? DatabaseError
                XCTAssertEqual(databaseError?.resultCode, .SQLITE_CONSTRAINT)
                XCTAssertTrue(databaseError?.message?.contains("t.id") ?? false, "\(error)")
            }
            XCTAssertThrowsError(try db.rows(insert, [.integer(2), .null], prepared: true))
            // The same compiled statement, reset after each error, inserts again.
            XCTAssertEqual(try db.rows(insert, [.integer(2), .text("b")], prepared: true).count, 1)
            XCTAssertThrowsError(try db.rows(insert, [.integer(3)], prepared: true), "too few values")
            XCTAssertThrowsError(try db.rows("SELEC 1"), "a syntax error")
            let names = try db.rows("SELECT name FROM t ORDER BY id").map { try $0.string("name") }
            XCTAssertEqual(names, ["a", "b"])
        }
    }
}
