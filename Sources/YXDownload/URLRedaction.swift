import Foundation

/// Removes credentials from URLs before they appear in messages, logs and results.
///
/// Every URL that YXDownload reports (``DownloadResult/url``, ``DownloadError/url``, log metadata) went
/// through ``redacted(_:)``. Use it for URLs you print yourself:
///
/// ```swift
/// URLRedaction.redacted(URL(string: "https://me:secret@example.com/a")!)   // "https://example.com/a"
/// ```
public enum URLRedaction {
    /// The URL as text, without its user name and password.
    public static func redacted(_ url: URL) -> String {
        guard url.user != nil || url.password != nil,  // the common case, without a second parse
            var parts = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else { return url.absoluteString }
        parts.user = nil
        parts.password = nil
        return parts.string ?? url.absoluteString
    }
}

extension URLRedaction {
    /// `text` with the credentials of every URL-like part replaced by `…`: whatever stands before an `@`
    /// back to the start of its authority (`//`, a `/`, a blank, a quote or a bracket), keeping a
    /// `scheme:` in front.
    ///
    /// For text that is not a parsed URL: a list line that is not a URL (`http//eve:secret@host/x`), a
    /// redirect target or a line of curl's verbose output. It errs on the side of hiding: an `@` in a
    /// path hides the path segment before it.
    ///
    /// ```swift
    /// URLRedaction.redactingCredentials(in: "to 'http://eve:pw@example.com/a'")  // "to 'http://…@example.com/a'"
    /// URLRedaction.redactingCredentials(in: "https:eve:pw@example.com/a")       // "https:…@example.com/a"
    /// ```
    package static func redactingCredentials(in text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "@")) else { return text }  // the common case, no copy
        var characters = Array(text)
        var index = characters.count - 1
        while index >= 0 {
            defer { index -= 1 }
            guard characters[index] == "@" else { continue }
            var start = index
            while start > 0, !isAuthorityBoundary(characters[start - 1]) { start -= 1 }
            // A scheme written without its slashes (`https:eve:pw@host`) stays in front.
            if let colon = characters[start..<index].firstIndex(of: ":"), colon > start,
                characters[start..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }),
                characters[start].isLetter, characters[start..<colon].count > 1
            {
                let scheme = String(characters[start..<colon]).lowercased()
                if scheme == "http" || scheme == "https" { start = colon + 1 }
            }
            guard start < index, characters[start..<index] != ["…"] else { continue }
            characters.replaceSubrange(start..<index, with: ["…"])
            index = start
        }
        return String(characters)
    }

    private static func isAuthorityBoundary(_ character: Character) -> Bool {
        character == "/" || character == "'" || character == "\"" || character == "<" || character == "("
            || character == "[" || character == "`" || character.isWhitespace
    }
}
