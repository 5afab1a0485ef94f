import Foundation
import YXQueue

/// Why a download failed: one error type for curl, HTTP, file-system and verification failures.
///
/// ``isTransient`` says whether trying again can help. The table (see SPEC §4):
///
/// | what happened | transient |
/// |---|---|
/// | connection refused, reset, or closed early (`couldNotConnect`, `connectionLost`, `partialBody`) | yes |
/// | no byte for the stall timeout, or no connection within the connect timeout (`timedOut`) | yes |
/// | HTTP 408, 429, 500, 502, 503, 504 | yes |
/// | other HTTP errors: 404, 403, 410, 401, … | no |
/// | a host name that does not resolve (`couldNotResolve`) | no |
/// | TLS certificate not trusted, TLS handshake failure | no |
/// | a scheme other than http/https, in the URL or a redirect | no |
/// | more than 10 redirects | no |
/// | checksum or length mismatch | no (the bytes are known bad; the `.part` is deleted) |
/// | the server changed the file while a segmented download was running | yes (restarts from zero) |
/// | a local file error (disk full, permission) | no |
public struct DownloadError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What kind of failure it was.
    public enum Kind: String, Sendable, Equatable {
        /// The URL cannot be parsed.
        case invalidURL
        /// Not http or https (the URL or a redirect).
        case unsupportedScheme
        /// The host name does not resolve.
        case couldNotResolve
        /// The connection was refused or could not be made in time.
        case couldNotConnect
        /// The connection broke (reset, closed, HTTP/2 stream error).
        case connectionLost
        /// No byte arrived for the stall timeout.
        case timedOut
        /// The body ended before its announced length.
        case partialBody
        /// TLS failed: untrusted certificate, handshake error.
        case tls
        /// More than the allowed number of redirects (a loop, usually).
        case tooManyRedirects
        /// The server answered with an error status (see ``DownloadError/httpStatus``).
        case httpStatus
        /// The server answered something the download cannot use (another range than asked, …).
        case unexpectedResponse
        /// The file changed on the server while parts of it were being fetched.
        case validatorChanged
        /// The file's length differs from the one announced.
        case lengthMismatch
        /// The file's digest differs from the expected checksum.
        case checksumMismatch
        /// A local file could not be created, written, synced or renamed.
        case fileSystem
        /// Any other transfer failure reported by curl.
        case transfer
    }

    /// What kind of failure it was.
    public var kind: Kind
    /// A one-line explanation for people.
    public var message: String
    /// The URL, with any user name and password removed.
    public var url: String
    /// The HTTP status of the final response, when there was one.
    public var httpStatus: Int?
    /// libcurl's result code, when curl reported the failure.
    public var curlCode: Int?
    /// The operating system's error number, when there was one.
    public var osErrno: Int32?
    /// How long the server asked us to wait (`Retry-After`), in seconds.
    public var retryAfter: TimeInterval?
    /// The URL of the request that failed, without credentials, when redirects led away from ``url``
    /// (a refused connection or an unknown host is the redirect target's, not the first server's).
    public var failedURL: String?

    /// Creates an error.
    public init(
        _ kind: Kind,
        _ message: String,
        url: String,
        httpStatus: Int? = nil,
        curlCode: Int? = nil,
        osErrno: Int32? = nil,
        retryAfter: TimeInterval? = nil
    ) {
        self.kind = kind
        self.message = message
        self.url = url
        self.httpStatus = httpStatus
        self.curlCode = curlCode
        self.osErrno = osErrno
        self.retryAfter = retryAfter
    }

    /// Whether trying again may succeed (see the table on ``DownloadError``).
    public var isTransient: Bool {
        switch kind {
        case .couldNotConnect, .connectionLost, .timedOut, .partialBody, .validatorChanged:
            true
        case .httpStatus:
            httpStatus.map(Self.transientStatuses.contains) ?? false
        case .invalidURL, .unsupportedScheme, .couldNotResolve, .tls, .tooManyRedirects, .unexpectedResponse,
            .lengthMismatch, .checksumMismatch, .fileSystem, .transfer:
            false
        }
    }

    /// HTTP statuses that are worth retrying.
    public static let transientStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]

    public var description: String {
        if let httpStatus, kind == .httpStatus { return "HTTP \(httpStatus) for \(url)" }
        return "\(message) (\(url))"
    }

    /// How the message of a `.fileSystem` error ends when the `.part` was not renamed because another
    /// file had taken its place (someone who can write in the folder replaced it during the download).
    public static let replacedPartReason = "it was replaced by another file during the download"

    /// How the message of a `.fileSystem` error ends when a `NAME.part` that holds bytes has neither resume
    /// state nor mark (a user's file, or one an older version left): it is left alone, never emptied.
    public static let foreignPartReason = "it holds bytes that no download of this program marked as its own"

    /// How the message of a `.fileSystem` error ends when another process (another run, a worker that
    /// shares the folder) has the `NAME.part` open for its own download of the file: it is left alone.
    public static let partInUseReason = "another process is downloading into it"

    /// A file-system error from `errno`.
    static func fileSystem(_ what: String, path: String, errno code: Int32 = errno, url: String) -> DownloadError {
        DownloadError(.fileSystem, "\(what) \(path): \(String(cString: strerror(code)))", url: url, osErrno: code)
    }
}
extension DownloadError: TransientError {}
