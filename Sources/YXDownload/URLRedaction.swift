import Foundation

extension URL {
    /// The URL as text without user name and password, for messages and logs.
    ///
    /// ```swift
    /// URL(string: "https://me:secret@example.com/a")!.redactedString  // "https://example.com/a"
    /// ```
    public var redactedString: String {
        guard user != nil || password != nil,  // the common case, without a second parse
            var parts = URLComponents(url: self, resolvingAgainstBaseURL: false)
        else { return absoluteString }
        parts.user = nil
        parts.password = nil
        return parts.string ?? absoluteString
    }
}
