import Foundation
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

    static var now: Int64 { micros(Date()) }
}

/// A value bound to a statement.
package enum SQLiteData: Sendable, Equatable {
    case integer(Int)
    case float(Double)
    case text(String)
    case blob(Data)
    case null

    init(_ value: Int) { self = .integer(value) }
    init(_ value: Int64) { self = .integer(Int(value)) }
    init(_ value: String) { self = .text(value) }
    init(_ value: Double) { self = .float(value) }
    init(_ value: Data) { self = .blob(value) }
    init(optional value: Int64?) { self = value.map { .integer(Int($0)) } ?? .null }
    init(optional value: String?) { self = value.map { .text($0) } ?? .null }
    init(optional value: Double?) { self = value.map { .float($0) } ?? .null }
}

/// A row a statement returned: its values, read by column name (as the statement spelled it), with
/// errors instead of traps for what the database did not send.
package struct SQLiteRow: JobRow, Sendable {
    /// The index of each column name; the same dictionary for every row of a statement.
    let columns: [String: Int]
    let values: [SQLiteData]

    /// The value of a column, or nil when the row has no such column.
    private func value(_ column: String) -> SQLiteData? {
        columns[column].map { values[$0] }
    }

    package func int(_ column: String) throws -> Int {
        guard let value = integer(column) else {
            throw JobStoreError.invalidResponse("column \(column) is missing or not an integer")
        }
        return value
    }

    package func int64(_ column: String) throws -> Int64 { Int64(try int(column)) }

    package func optionalInt64(_ column: String) -> Int64? { integer(column).map(Int64.init) }

    package func optionalDouble(_ column: String) -> Double? {
        switch value(column) {
        case .float(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    /// A REAL column (an integer value is read as one: SQLite may store 0.0 as 0).
    package func double(_ column: String) throws -> Double {
        guard let double = optionalDouble(column) else {
            throw JobStoreError.invalidResponse("column \(column) is missing or not a number")
        }
        return double
    }

    package func string(_ column: String) throws -> String {
        guard let value = optionalString(column) else {
            throw JobStoreError.invalidResponse("column \(column) is missing or not text")
        }
        return value
    }

    package func optionalString(_ column: String) -> String? {
        switch value(column) {
        case .text(let value): value
        case .integer(let value): String(value)
        default: nil
        }
    }

    package func data(_ column: String) -> Data { optionalData(column) ?? Data() }

    package func optionalData(_ column: String) -> Data? {
        switch value(column) {
        case .blob(let value): value
        case .text(let value): Data(value.utf8)
        case .null, nil: nil
        default: Data()
        }
    }

    package func bool(_ column: String) -> Bool { (integer(column) ?? 0) != 0 }

    /// An INTEGER column, or nil when missing or NULL.
    private func integer(_ column: String) -> Int? {
        switch value(column) {
        case .integer(let value): value
        case .float(let value) where value.rounded() == value && abs(value) < 9.2e18: Int(value)
        default: nil
        }
    }

    package func date(_ column: String) throws -> Date { SQLiteTime.date(try int64(column)) }

    package func optionalDate(_ column: String) -> Date? { optionalInt64(column).map(SQLiteTime.date) }
}

/// `?, ?, ?` for `count` parameters.
func placeholders(_ count: Int) -> String {
    Array(repeating: "?", count: count).joined(separator: ", ")
}

/// `(?, …), (?, …)`: `count` rows of `columns` parameters.
func rowPlaceholders(_ columns: Int, count: Int) -> String {
    Array(repeating: "(" + placeholders(columns) + ")", count: count).joined(separator: ", ")
}
