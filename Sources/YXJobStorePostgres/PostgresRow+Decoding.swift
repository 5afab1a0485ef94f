import Foundation
import PostgresNIO
import YXJobStore

/// Reading columns by name through postgres-nio's decoding: a missing column or another type throws.
extension PostgresRandomAccessRow: JobRow {
    package func int(_ column: String) throws -> Int { try self[column].decode(Int.self) }
    package func int64(_ column: String) throws -> Int64 { try self[column].decode(Int64.self) }
    package func optionalInt64(_ column: String) throws -> Int64? { try self[column].decode(Int64?.self) }
    package func double(_ column: String) throws -> Double { try self[column].decode(Double.self) }
    package func optionalDouble(_ column: String) throws -> Double? { try self[column].decode(Double?.self) }
    package func string(_ column: String) throws -> String { try self[column].decode(String.self) }
    package func optionalString(_ column: String) throws -> String? { try self[column].decode(String?.self) }
    package func bool(_ column: String) throws -> Bool { try self[column].decode(Bool.self) }
    package func data(_ column: String) throws -> Data { Data(try self[column].decode(ByteBuffer.self).readableBytesView) }
    package func optionalData(_ column: String) throws -> Data? {
        try self[column].decode(ByteBuffer?.self).map { Data($0.readableBytesView) }
    }
    package func date(_ column: String) throws -> Date { try self[column].decode(Date.self) }
    package func optionalDate(_ column: String) throws -> Date? { try self[column].decode(Date?.self) }
}
