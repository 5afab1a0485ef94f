import Foundation

extension URL {
    /// The URL as text without user name and password, for messages and logs.
    ///
    /// ```swift
    /// URL(string: "https://me:secret@example.com/a")!.redactedString  // "https://example.com/a"
    /// ```
    public var redactedString: String {
        guard var parts = URLComponents(url: self, resolvingAgainstBaseURL: false),
            parts.user != nil || parts.password != nil
        else { return absoluteString }
        parts.user = nil
        parts.password = nil
        return parts.string ?? absoluteString
    }
}
