import Foundation

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
            case .seconds(let seconds): text += String(format: "%.3f", seconds.isFinite ? seconds : 0)
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
                result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
