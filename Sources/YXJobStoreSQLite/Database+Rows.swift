import Foundation
import GRDB
import GRDBSQLite

extension Database {
    /// Runs one statement and returns its rows.
    ///
    /// GRDB opens the connection, keeps its settings and its compiled statements; the values are bound
    /// and the rows read here with SQLite's own calls. GRDB's `StatementArguments` and row cursor cost a
    /// sixth of a batched claim's time on the writer's thread (a key path per value, a copy per row),
    /// which made batched work slower than the driver before it.
    ///
    /// - Parameter prepared: Keep the compiled statement on this connection and reuse it (GRDB's statement
    ///   cache). Only for statements whose text is the same on every call (no list of `?` that grows with
    ///   its input): compiling is most of the cost of a small statement (an unbatched claim compiled in
    ///   about 200 µs and ran in 57), and the cache keeps every text it was given.
    package func rows(_ sql: String, _ binds: [SQLiteData] = [], prepared: Bool = false) throws -> [SQLiteRow] {
        let statement = prepared ? try cachedStatement(sql: sql) : try makeStatement(sql: sql)
        let handle = statement.sqliteStatement
        defer { sqlite3_reset(handle) }
        try bind(binds, to: handle, sql: sql)
        let count = Int(sqlite3_column_count(handle))
        var columns: [String: Int] = [:]
        for index in 0..<count {
            let name = String(cString: sqlite3_column_name(handle, CInt(index)))
            if columns[name] == nil { columns[name] = index }
        }
        var rows: [SQLiteRow] = []
        while true {
            let code = sqlite3_step(handle)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else { throw failure(code, sql: sql) }
            var values: [SQLiteData] = []
            values.reserveCapacity(count)
            for index in 0..<CInt(count) {
                values.append(Self.column(index, of: handle))
            }
            rows.append(SQLiteRow(columns: columns, values: values))
        }
        return rows
    }

    /// Runs statements that return nothing (a `PRAGMA`, `BEGIN`, several `CREATE`s).
    package func run(_ sql: String, _ binds: [SQLiteData] = []) throws {
        if binds.isEmpty {
            try execute(sql: sql)
        } else {
            _ = try rows(sql, binds)
        }
    }

    private func bind(_ binds: [SQLiteData], to handle: OpaquePointer, sql: String) throws {
        guard Int(sqlite3_bind_parameter_count(handle)) == binds.count else {
            throw DatabaseError(
                resultCode: .SQLITE_MISUSE,
                message: "\(binds.count) values for \(sqlite3_bind_parameter_count(handle)) parameters",
                sql: sql
            )
        }
        for (offset, value) in binds.enumerated() {
            let index = CInt(offset + 1)
            let code: CInt
            switch value {
            case .integer(let integer): code = sqlite3_bind_int64(handle, index, Int64(integer))
            case .float(let double): code = sqlite3_bind_double(handle, index, double)
            case .text(let text):
                // By length, so that a NUL inside the text is kept.
                var text = text
                code = text.withUTF8 { bytes in
                    bytes.withMemoryRebound(to: CChar.self) { chars in
                        if let start = chars.baseAddress {
                            sqlite3_bind_text(handle, index, start, CInt(chars.count), transient)
                        } else {
                            sqlite3_bind_text(handle, index, "", 0, transient)
                        }
                    }
                }
            case .blob(let data):
                code = data.withUnsafeBytes { bytes in
                    // A zero-length blob, not NULL, for empty data.
                    sqlite3_bind_blob(handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), CInt(bytes.count), transient)
                }
            case .null: code = sqlite3_bind_null(handle, index)
            }
            guard code == SQLITE_OK else { throw failure(code, sql: sql) }
        }
    }

    private static func column(_ index: CInt, of handle: OpaquePointer) -> SQLiteData {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER: .integer(Int(sqlite3_column_int64(handle, index)))
        case SQLITE_FLOAT: .float(sqlite3_column_double(handle, index))
        case SQLITE_TEXT:
            .text(
                sqlite3_column_text(handle, index).map {
                    String(decoding: UnsafeBufferPointer(start: $0, count: Int(sqlite3_column_bytes(handle, index))), as: UTF8.self)
                } ?? ""
            )
        case SQLITE_BLOB:
            if let bytes = sqlite3_column_blob(handle, index) {
                .blob(Data(bytes: bytes, count: Int(sqlite3_column_bytes(handle, index))))
            } else {
                .blob(Data())
            }
        default: .null
        }
    }

    private func failure(_ code: CInt, sql: String) -> DatabaseError {
        DatabaseError(
            resultCode: ResultCode(rawValue: code),
            message: sqliteConnection.map { String(cString: sqlite3_errmsg($0)) },
            sql: sql
        )
    }
}

/// `SQLITE_TRANSIENT`: SQLite copies the bound text or blob before the call returns.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
