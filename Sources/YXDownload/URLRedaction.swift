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
    /// the first `//` before it in the same word (words end at blanks only), else a leading
    /// `http:`/`https:`, else the word's start.
    ///
    /// For text a person typed that may be a broken URL (a list line, an argument): it errs on the side
    /// of hiding, so a password with `/`, `)` or `'` in it, or a URL with a slash missing, does not show.
    ///
    /// ```swift
    /// URLRedaction.redactingCredentials(in: "http//eve:pw@example.com/a")  // "http//…@example.com/a"
    /// URLRedaction.redactingCredentials(in: "https:eve:pw@example.com/a")  // "https:…@example.com/a"
    /// ```
    package static func redactingCredentials(in text: String) -> String {
        redact(text) { characters, wordStart, at in
            if let slashes = firstDoubleSlash(in: characters, from: wordStart, before: at) { return slashes + 2 }
            if let colon = characters[wordStart..<at].firstIndex(of: ":"),
                ["http", "https"].contains(String(characters[wordStart..<colon]).lowercased())
            {
                return colon + 1
            }
            return wordStart
        }
    }

    /// `text` with the credentials of the URLs in it hidden, as curl's verbose lines quote them: after
    /// `//` (`scheme://user:password@host`, a scheme-relative `//user@host`), or a whole word that has
    /// no `/` before its `@` (`user:password@proxy:3128`, as a proxy variable may be set). An `@` after a
    /// `/` that is not the authority's (`/pkg@1.2.3/`, `?mail=bob@example.com`) stays.
    package static func redactingCredentials(inAuthoritiesOf text: String) -> String {
        redact(text) { characters, wordStart, at in
            if let slashes = firstDoubleSlash(in: characters, from: wordStart, before: at) {
                let authority = slashes + 2
                return characters[authority..<at].contains("/") ? nil : authority
            }
            return characters[wordStart..<at].contains("/") ? nil : wordStart
        }
    }

    /// Hides, for each `@` (from the last), the characters from where `start` says (nil: none) to the
    /// `@`. Words end at blanks; quotes and brackets that open a word are kept in front of it.
    private static func redact(_ text: String, start: ([Character], Int, Int) -> Int?) -> String {
        guard text.utf8.contains(UInt8(ascii: "@")) else { return text }  // the common case, no copy
        var characters = Array(text)
        var index = characters.count - 1
        while index >= 0 {
            defer { index -= 1 }
            guard characters[index] == "@" else { continue }
            var wordStart = index
            while wordStart > 0, !characters[wordStart - 1].isWhitespace { wordStart -= 1 }
            while wordStart < index, "'\"`<([{".contains(characters[wordStart]) { wordStart += 1 }
            guard let from = start(characters, wordStart, index), from < index else { continue }
            if characters[from..<index] == ["…"] { continue }
            characters.replaceSubrange(from..<index, with: ["…"])
            index = from
        }
        return String(characters)
    }

    private static func firstDoubleSlash(in characters: [Character], from start: Int, before end: Int) -> Int? {
        var index = start
        while index + 1 < end {
            if characters[index] == "/" && characters[index + 1] == "/" { return index }
            index += 1
        }
        return nil
    }
}
