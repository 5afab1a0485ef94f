import YXDownload

/// Text from outside (a list line, a header, a job read from a store) made safe to print on one line.
package enum PrintableText {
    /// The text with control characters, the invisible marks that reorder text (U+202E and the other
    /// bidirectional controls) and the other invisible characters of file names
    /// (`FileNaming.isInvisible`) written as `\u{…}`: a stray CR, a line separator or an escape sequence
    /// must neither break a `FILE:LINE: reason` line nor drive the terminal, and `a\u{202E}txt.exe` must
    /// not show as `aexe.txt`.
    package static func escaped(_ text: String) -> String {
        escaping(text) { scalar in
            scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value)
                || FileNaming.isBidirectionalControl(scalar.value) || FileNaming.isInvisible(scalar.value)
        }
    }

    /// The text with each character that `isEscaped` picks written as `\u{…}` (hexadecimal).
    static func escaping(_ text: String, _ isEscaped: (Unicode.Scalar) -> Bool) -> String {
        guard text.unicodeScalars.contains(where: isEscaped) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if isEscaped(scalar) {
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
