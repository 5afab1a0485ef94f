internal import CCurl
import Foundation
import Logging

/// curl's own account of a transfer (`CURLOPT_VERBOSE`): connections made or reused, the HTTP version,
/// TLS, and the header lines sent and received, logged at trace, one record per line, without
/// credentials.
///
/// Only engines made with `logsConnectionDetails` turn it on (`yxdownload -vv`): curl then formats
/// these lines for every transfer, which costs time. Lines are logged as curl's own tool prints them:
/// `* ` for curl's notes, `> ` for header lines sent, `< ` for header lines received. Bodies are never
/// logged.
///
/// Redacted (the value becomes `[redacted]`): the values of `Authorization`, `Proxy-Authorization`,
/// `Cookie` and `Set-Cookie`, and of every header whose name speaks of a secret (`auth`, `token`,
/// `secret`, `passw`, `session`, a name ending in `key`; not HTTP/2's `:authority`, nor a server's
/// `WWW-Authenticate` challenge), in header lines and wherever curl quotes such a
/// header in a note; the user name in curl's "auth using Basic with user '…'" notes; and the user name
/// and password of any URL in a line (``URLRedaction/redactingCredentials(inAuthoritiesOf:)``).
enum CurlDiagnostics {
    /// Logs one piece of curl's verbose output. Lane thread (from curl's debug callback).
    static func log(_ type: curl_infotype, _ bytes: UnsafeRawBufferPointer, url: String, to logger: Logger) {
        let prefix: String
        switch type {
        case CURLINFO_TEXT: prefix = "* "
        case CURLINFO_HEADER_OUT: prefix = "> "
        case CURLINFO_HEADER_IN: prefix = "< "
        default: return  // bodies and TLS records
        }
        let text = String(decoding: bytes, as: UTF8.self)
        for raw in text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let unredacted = raw.hasSuffix("\r") ? String(raw.dropLast()) : String(raw)
            guard !unredacted.isEmpty else { continue }
            // A URL with credentials: the one asked for, quoted by curl when it follows a relative
            // redirect, or a server's `Location` (only in URLs' authorities: a path's `@` stays).
            // Secret headers first (their names must still be there to be recognised), then URLs.
            let headersHidden = type == CURLINFO_TEXT ? redactedNote(unredacted) : redactedHeader(unredacted)
            let clean = URLRedaction.redactingCredentials(inAuthoritiesOf: headersHidden)
            logger.trace("curl \(prefix)\(printable(clean))", metadata: ["url": "\(url)"])
        }
    }

    /// Whether a header's value is a credential, by its name.
    static func isSecret(headerName: some StringProtocol) -> Bool {
        let name = headerName.lowercased().trimmingWhitespace()
        if ["authorization", "proxy-authorization", "cookie", "set-cookie"].contains(name) { return true }
        // HTTP/2's pseudo-headers (`:authority` is the host and port, never a user: RFC 9113 8.3.1), and a
        // server's challenges (`WWW-Authenticate: Basic realm="…"`), which hold no secret and say why a
        // request was refused.
        if name.hasPrefix(":") || name == "www-authenticate" || name == "proxy-authenticate" { return false }
        return ["auth", "token", "secret", "passw", "session", "cookie"].contains { name.firstRange(of: $0) != nil }
            || name.hasSuffix("key")
    }

    /// A header line `Name: value` with its value replaced when it is a credential.
    static func redactedHeader(_ line: String) -> String {
        guard let colon = line.firstIndex(of: ":"), isSecret(headerName: line[..<colon]) else { return line }
        return line[...colon] + " [redacted]"
    }

    /// One of curl's notes, with any credential it quotes replaced: a user name (`with user 'alice'`), and
    /// a header quoted as `[name: value]` or `name: value`.
    static func redactedNote(_ line: String) -> String {
        var characters = Array(line)
        if let user = line.firstRange(of: "with user '") {
            let from = line.distance(from: line.startIndex, to: user.upperBound)
            if let to = characters[from...].firstIndex(of: "'") {
                characters.replaceSubrange(from..<to, with: "[redacted]")
            }
        }
        // A header curl quotes, for example an HTTP/2 request's `[authorization: Basic …]`.
        var index = 0
        while index < characters.count {
            defer { index += 1 }
            guard characters[index] == ":" else { continue }
            var nameStart = index
            while nameStart > 0, characters[nameStart - 1] != "[", characters[nameStart - 1] != " " { nameStart -= 1 }
            guard nameStart < index, isSecret(headerName: String(characters[nameStart..<index])) else { continue }
            let valueEnd = characters[(index + 1)...].firstIndex(of: "]") ?? characters.count
            let replacement = Array(" [redacted]")
            characters.replaceSubrange((index + 1)..<valueEnd, with: replacement)
            index += replacement.count
        }
        return String(characters)
    }

    /// The text with control characters written as `\u{…}`: a header line must not drive the terminal.
    private static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
