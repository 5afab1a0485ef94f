import Foundation
import YXTerminal

/// One JSON object on one line, keys in the order given (SPEC §4's `--json` events).
///
/// ```swift
/// JSONLine([("event", .string("skip")), ("bytes", .int(5))]).text   // {"event":"skip","bytes":5}
/// ```
package struct JSONLine {
    package enum Value {
        case string(String)
        case int(Int64)
        case seconds(Double)
        case null
    }

    package let text: String

    package init(_ fields: KeyValuePairs<String, Value>) {
        text = Self.render(fields)
    }

    /// The same, from fields gathered at run time (a line whose optional fields depend on the event).
    package init(_ fields: [(key: String, value: Value)]) {
        text = Self.render(fields)
    }

    private static func render<Fields: Sequence>(_ fields: Fields) -> String
    where Fields.Element == (key: String, value: Value) {
        var text = "{"
        for (index, (key, value)) in fields.enumerated() {
            if index > 0 { text += "," }
            text += Self.quoted(key) + ":"
            switch value {
            case .string(let string): text += Self.quoted(string)
            case .int(let number): text += String(number)
            case .seconds(let seconds): text += ByteFormatting.decimal(seconds.isFinite ? seconds : 0, places: 3)
            case .null: text += "null"
            }
        }
        return text + "}"
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped; the rest as UTF-8.
    ///
    /// Byte by byte: every byte that needs escaping is ASCII, and a multi-byte UTF-8 sequence holds none.
    /// (Appending scalar by scalar to a `String` cost about 300 instructions a character: a third of a
    /// JSON line's cost per file.)
    static func quoted(_ string: String) -> String {
        let utf8 = string.utf8
        guard utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0x7F }) else {
            return "\"" + string + "\""
        }
        let hex = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = [0x22]
        bytes.reserveCapacity(utf8.count + 16)
        for byte in utf8 {
            switch byte {
            case 0x22, 0x5C: bytes += [0x5C, byte]
            case 0x0A: bytes += [0x5C, UInt8(ascii: "n")]
            case 0x0D: bytes += [0x5C, UInt8(ascii: "r")]
            case 0x09: bytes += [0x5C, UInt8(ascii: "t")]
            case _ where byte < 0x20 || byte == 0x7F:
                bytes += [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(0x22)
        return String(decoding: bytes, as: UTF8.self)
    }
}
