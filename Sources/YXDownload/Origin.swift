import Foundation

/// Where a URL's requests go: its scheme, host and port (the scheme's default port when the URL names
/// none), as `scheme://host:port` in lower case.
///
/// Two URLs with one origin share a server's limits: a `Retry-After` from it holds back both, and a
/// per-host limit counts both.
///
/// ```swift
/// Origin(URL(string: "HTTPS://Example.com/a.iso")!)?.description   // "https://example.com:443"
/// ```
public struct Origin: Hashable, Sendable, CustomStringConvertible {
    /// `scheme://host:port`, lower case.
    public let description: String

    /// The origin of `url`, or `nil` when it has no scheme or no host.
    public init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : 0)
        self.description = "\(scheme)://\(host):\(port)"
    }
}
