import Foundation
import YXTerminal

/// One JSON object on one line, keys in the order given (SPEC §4's `--json` events).
///
/// ```swift
/// JSONLine([("event", .string("skip")), ("bytes", .int(5))]).text   // {"event":"skip","bytes":5}
/// ```
struct JSONLine {
    enum Value {
        case string(String)
        case int(Int64)
        case seconds(Double)
        case null
    }

    let text: String

    init(_ fields: KeyValuePairs<String, Value>) {
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
        self.text = text + "}"
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped; the rest as UTF-8.
    static func quoted(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
