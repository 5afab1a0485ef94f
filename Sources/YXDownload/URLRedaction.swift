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
    /// `text` with whatever stands before each `@` hidden (`…`), back to the start of a URL's authority:
    /// the last `//` before it in the same word, else a leading `http:`/`https:`, else the word's start.
    ///
    /// For text a person typed that may be a broken URL (a list line, an argument): it errs on the side
    /// of hiding, so a password with a `/` in it, or a URL with a slash missing, does not show.
    ///
    /// ```swift
    /// URLRedaction.redactingCredentials(in: "http//eve:pw@example.com/a")  // "http//…@example.com/a"
    /// URLRedaction.redactingCredentials(in: "https:eve:pw@example.com/a")  // "https:…@example.com/a"
    /// ```
    package static func redactingCredentials(in text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "@")) else { return text }  // the common case, no copy
        var characters = Array(text)
        var index = characters.count - 1
        while index >= 0 {
            defer { index -= 1 }
            guard characters[index] == "@" else { continue }
            var wordStart = index
            while wordStart > 0, !isWordBoundary(characters[wordStart - 1]) { wordStart -= 1 }
            var start = wordStart
            if let slashes = lastDoubleSlash(in: characters, from: wordStart, before: index) {
                start = slashes + 2
            } else if let colon = characters[wordStart..<index].firstIndex(of: ":"),
                ["http", "https"].contains(String(characters[wordStart..<colon]).lowercased())
            {
                start = colon + 1
            }
            guard start < index else { continue }
            characters.replaceSubrange(start..<index, with: ["…"])
            index = start
        }
        return String(characters)
    }

    /// `text` with the user name and password of every `scheme://user:password@host` in it hidden
    /// (`scheme://…@host`): only inside an authority, so a path's `@` (`/pkg@1.2.3/`) stays. For lines
    /// that quote well-formed URLs, such as curl's verbose output.
    package static func redactingCredentials(inAuthoritiesOf text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "@")), text.contains("://") else { return text }
        var characters = Array(text)
        var index = 0
        while index + 2 < characters.count {
            defer { index += 1 }
            guard characters[index] == ":", characters[index + 1] == "/", characters[index + 2] == "/" else { continue }
            let authorityStart = index + 3
            var end = authorityStart
            while end < characters.count, !"/?#".contains(characters[end]), !isWordBoundary(characters[end]) { end += 1 }
            guard let at = characters[authorityStart..<end].lastIndex(of: "@"), at > authorityStart else { continue }
            characters.replaceSubrange(authorityStart..<at, with: ["…"])
            index = authorityStart
        }
        return String(characters)
    }

    private static func lastDoubleSlash(in characters: [Character], from start: Int, before end: Int) -> Int? {
        var index = end - 2
        while index >= start {
            if characters[index] == "/" && characters[index + 1] == "/" { return index }
            index -= 1
        }
        return nil
    }

    private static func isWordBoundary(_ character: Character) -> Bool {
        character.isWhitespace || character == "'" || character == "\"" || character == "`" || character == "<"
            || character == ">" || character == "(" || character == ")"
    }
}
