import Foundation

/// Turns URLs and user-given names into safe file names (SPEC §4 "Naming").
///
/// ```swift
/// FileNaming.name(for: URL(string: "https://x.org/a%20b.txt?v=1")!)   // "a b.txt"
/// FileNaming.name(for: URL(string: "https://x.org/")!)                // "index.html"
/// ```
public enum FileNaming {
    /// The last path component of the URL as written (no query), percent-decoded once, sanitized;
    /// `index.html` when it is empty.
    public static func name(for url: URL) -> String {
        let path = url.path(percentEncoded: true)
        let bytes = path.utf8
        let start = bytes.lastIndex(of: UInt8(ascii: "/")).map { bytes.index(after: $0) } ?? bytes.startIndex
        let last = path[start...]
        let decoded = percentDecoded(last.utf8) ?? String(last)
        let name = sanitize(decoded)
        return name.isEmpty ? "index.html" : name
    }

    /// `%XX` escapes decoded once, on bytes (`removingPercentEncoding` goes through `NSString`); nil for
    /// a malformed escape or a result that is not UTF-8 (where `removingPercentEncoding` on Linux inserts
    /// U+FFFD).
    static func percentDecoded(_ text: Substring.UTF8View) -> String? {
        guard text.contains(UInt8(ascii: "%")) else { return String(Substring(text)) }
        var output: [UInt8] = []
        output.reserveCapacity(text.count)
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text[index]
            guard byte == UInt8(ascii: "%") else {
                output.append(byte)
                text.formIndex(after: &index)
                continue
            }
            let high = text.index(after: index)
            guard high < text.endIndex, text.index(after: high) < text.endIndex,
                let h = hexValue(text[high]), let l = hexValue(text[text.index(after: high)])
            else { return nil }
            output.append(h << 4 | l)
            index = text.index(high, offsetBy: 2)
        }
        return String(validating: output, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Makes one path component safe: `/`, `\`, NUL and control characters become `_`, and so do the
    /// invisible marks that reorder text (bidirectional controls such as U+202E, with which
    /// `invoice‮fdp.exe` shows as `invoiceexe.pdf`) and the invisible characters that hide in a name or
    /// break its line (the zero-width space U+200B, the soft hyphen, the byte order mark, U+2028 and
    /// U+2029, and others; not the zero-width joiner and non-joiner); `.` and `..` become `_` and `__`.
    /// Returns "" for an empty name.
    public static func sanitize(_ name: String) -> String {
        sanitize(name, keepingInvisible: false)
    }

    /// ``sanitize(_:)``, or with `keepingInvisible` the rule of yxdownload before invisible characters
    /// were replaced (2026-11-27): what a name stored by an older version may hold. A worker runs such a
    /// job under the name it was queued with, where its `.part` may already be.
    package static func sanitize(_ name: String, keepingInvisible: Bool) -> String {
        // Most names need nothing: one pass over the bytes, and the name is returned as it is.
        if !needsReplacement(name.utf8) {
            if name == "." { return "_" }
            if name == ".." { return "__" }
            return name
        }
        var result = ""
        result.unicodeScalars.reserveCapacity(name.unicodeScalars.count)
        for scalar in name.unicodeScalars {
            if scalar == "/" || scalar == "\\" || scalar.value < 0x20 || scalar.value == 0x7F
                || (0x80...0x9F).contains(scalar.value) || isBidirectionalControl(scalar.value)
                || (!keepingInvisible && isInvisible(scalar.value))
            {
                result.unicodeScalars.append("_")
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        if result == "." { return "_" }
        if result == ".." { return "__" }
        return result
    }

    /// The arabic letter mark, the left-to-right and right-to-left marks, embeddings, overrides and
    /// isolates (U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069).
    package static func isBidirectionalControl(_ value: UInt32) -> Bool {
        value == 0x061C || value == 0x200E || value == 0x200F || (0x202A...0x202E).contains(value)
            || (0x2066...0x2069).contains(value)
    }

    /// Characters that show as nothing, or end the line, and have no use in a file name: the soft hyphen
    /// (U+00AD), the combining grapheme joiner (U+034F), the Mongolian vowel separator (U+180E), the
    /// zero-width space (U+200B), the line and paragraph separators (U+2028, U+2029), the word joiner,
    /// the invisible operators and the deprecated format characters (U+2060–U+2064, U+206A–U+206F), the
    /// Hangul fillers (U+3164, U+FFA0), the zero-width no-break space (the byte order mark, U+FEFF) and
    /// the interlinear annotation marks (U+FFF9–U+FFFB). Two names that differ only by one of them look
    /// the same in a listing, and a separator breaks a printed line. The zero-width joiner and non-joiner
    /// (U+200C, U+200D) stay: Persian, the Indic scripts and emoji sequences need them.
    package static func isInvisible(_ value: UInt32) -> Bool {
        switch value {
        case 0xAD, 0x34F, 0x180E, 0x200B, 0x2028, 0x2029, 0x2060...0x2064, 0x206A...0x206F, 0x3164, 0xFFA0, 0xFEFF,
            0xFFF9...0xFFFB:
            true
        default:
            false
        }
    }

    /// Whether `sanitize` may change a character of these UTF-8 bytes: `/`, `\`, C0 controls, DEL, a C1
    /// control or the soft hyphen (U+0080–U+009F and U+00AD, encoded as 0xC2 followed by 0x80–0x9F or
    /// 0xAD), or a lead byte of a bidirectional control or an invisible character (0xCD for U+034F, 0xD8
    /// for U+061C, 0xE1 for U+180E, 0xE2 for U+2000–U+2FFF, 0xE3 for U+3164, 0xEF for U+FxXX;
    /// `sanitize` then looks at the characters).
    private static func needsReplacement(_ bytes: String.UTF8View) -> Bool {
        var afterC2 = false
        for byte in bytes {
            if byte < 0x20 || byte == 0x7F || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\\") { return true }
            if afterC2 && ((0x80...0x9F).contains(byte) || byte == 0xAD) { return true }
            switch byte {
            case 0xCD, 0xD8, 0xE1, 0xE2, 0xE3, 0xEF: return true
            default: break
            }
            afterC2 = byte == 0xC2
        }
        return false
    }
}
