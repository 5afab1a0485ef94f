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
