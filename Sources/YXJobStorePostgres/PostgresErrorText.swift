import PostgresNIO

/// A PostgreSQL error as a person reads it. postgres-nio describes every `PSQLError` with the same
/// generic sentence, so that a program does not show a server's details to its own users by accident;
/// a command-line tool talks to the person who runs the server, and "connection refused" or the server's
/// own message is what says what to do. Never the connection's password: it is in none of these fields.
///
/// ```swift
/// PostgresErrorText.text(for: error)
/// // "connection error (connection refused: 127.0.0.1:1)"
/// ```
public enum PostgresErrorText {
    /// A sentence for a `PSQLError`: its code, the server's message and detail, or the error under it
    /// (a refused connection, a failed TLS handshake); nil for any other error.
    public static func text(for error: any Error) -> String? {
        guard let error = error as? PSQLError else { return nil }
        var parts: [String] = []
        if let message = error.serverInfo?[.message] {
            parts.append(message)
            if let detail = error.serverInfo?[.detail] { parts.append(detail) }
            if let hint = error.serverInfo?[.hint] { parts.append("hint: " + hint) }
        }
        if let underlying = error.underlying { parts.append(String(describing: underlying)) }
        let code = Self.words(String(describing: error.code))
        return parts.isEmpty ? code : "\(code) (\(parts.joined(separator: "; ")))"
    }

    /// `connectionError` → `connection error`.
    private static func words(_ name: String) -> String {
        var text = ""
        for character in name {
            if character.isUppercase {
                text += " " + character.lowercased()
            } else {
                text.append(character)
            }
        }
        return text
    }
}
