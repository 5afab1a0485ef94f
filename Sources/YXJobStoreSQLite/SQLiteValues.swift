import Foundation
import SQLiteNIO
import YXJobStore
import YXQueue

/// Times are stored as microseconds since 1970 (UTC) in INTEGER columns.
enum SQLiteTime {
    static func micros(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    static func date(_ micros: Int64) -> Date {
        Date(timeIntervalSince1970: Double(micros) / 1_000_000)
    }

    static func micros(_ duration: Duration) -> Int64 {
        let parts = duration.components
        return parts.seconds * 1_000_000 + parts.attoseconds / 1_000_000_000_000
    }

    static var now: Int64 { micros(Date()) }
}

extension SQLiteData {
    init(_ value: Int) { self = .integer(value) }
    init(_ value: Int64) { self = .integer(Int(value)) }
    init(_ value: String) { self = .text(value) }
    init(_ value: Double) { self = .float(value) }
    init(_ value: Data) { self = .blob(ByteBuffer(bytes: value)) }
    init(optional value: Int64?) { self = value.map { .integer(Int($0)) } ?? .null }
    init(optional value: String?) { self = value.map { .text($0) } ?? .null }
    init(optional value: Double?) { self = value.map { .float($0) } ?? .null }
}

/// Reading columns by name, with errors instead of traps for what the database did not send.
extension SQLiteRow: JobRow {
    package func int(_ column: String) throws -> Int {
        guard let value = self.column(column)?.integer else {
            throw JobStoreError.invalidResponse("column \(column) is missing or not an integer")
        }
        return value
    }

    package func int64(_ column: String) throws -> Int64 { Int64(try int(column)) }

    package func optionalInt64(_ column: String) -> Int64? {
        guard let value = self.column(column), !value.isNull else { return nil }
        return value.integer.map(Int64.init)
    }

    package func optionalDouble(_ column: String) -> Double? {
        guard let value = self.column(column), !value.isNull else { return nil }
        return value.double
    }

    /// A REAL column (an integer value is read as one: SQLite may store 0.0 as 0).
    package func double(_ column: String) throws -> Double {
        guard let value = self.column(column), !value.isNull, let double = value.double else {
            throw JobStoreError.invalidResponse("column \(column) is missing or not a number")
        }
        return double
    }

    package func string(_ column: String) throws -> String {
        guard let value = self.column(column)?.string else {
            throw JobStoreError.invalidResponse("column \(column) is missing or not text")
        }
        return value
    }

    package func optionalString(_ column: String) -> String? {
        guard let value = self.column(column), !value.isNull else { return nil }
        return value.string
    }

    package func data(_ column: String) -> Data {
        guard let buffer = self.column(column)?.blob else { return Data() }
        return Data(buffer.readableBytesView)
    }

    package func optionalData(_ column: String) -> Data? {
        guard let value = self.column(column), !value.isNull else { return nil }
        return value.blob.map { Data($0.readableBytesView) } ?? Data()
    }

    package func bool(_ column: String) -> Bool {
        (self.column(column)?.integer ?? 0) != 0
    }

    package func date(_ column: String) throws -> Date { SQLiteTime.date(try int64(column)) }

    package func optionalDate(_ column: String) -> Date? { optionalInt64(column).map(SQLiteTime.date) }
}

/// `?, ?, ?` for `count` parameters.
func placeholders(_ count: Int) -> String {
    Array(repeating: "?", count: count).joined(separator: ", ")
}
