/// The width of text in terminal columns, close enough to fit lines: East Asian wide characters and
/// most emoji take two columns, combining marks none. Shared by `yxdownload` and the demo.
package enum TextWidth {
    package static func of(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { $0 + width(of: $1) }
    }

    package static func width(of scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x20 || (0x7F..<0xA0).contains(value) { return 0 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if (0x1100...0x115F).contains(value) || (0x2E80...0xA4CF).contains(value) || (0xAC00...0xD7A3).contains(value)
            || (0xF900...0xFAFF).contains(value) || (0xFE30...0xFE4F).contains(value) || (0xFF00...0xFF60).contains(value)
            || (0xFFE0...0xFFE6).contains(value) || (0x1F300...0x1FAFF).contains(value)
            || (0x20000...0x3FFFD).contains(value)
        {
            return 2
        }
        return 1
    }

    /// The text cut to at most `columns` columns, ending in `…` when cut.
    package static func fit(_ text: String, to columns: Int) -> String {
        guard columns > 0 else { return "" }
        if of(text) <= columns { return text }
        var result = ""
        var used = 0
        for character in text {
            let w = of(String(character))
            if used + w > columns - 1 { break }
            result.append(character)
            used += w
        }
        return result + "…"
    }

    /// The text cut or padded with spaces to exactly `columns` columns.
    package static func pad(_ text: String, to columns: Int) -> String {
        let fitted = fit(text, to: columns)
        return fitted + String(repeating: " ", count: max(0, columns - of(fitted)))
    }

    /// Right-aligned in `columns` columns.
    package static func padLeft(_ text: String, to columns: Int) -> String {
        String(repeating: " ", count: max(0, columns - of(text))) + text
    }
}
