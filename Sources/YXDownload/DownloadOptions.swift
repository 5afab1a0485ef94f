import Foundation
import YXQueue

/// How one download goes: connections, retries, timeouts, headers, TLS, and what happens around the
/// final rename.
///
/// Give them to ``Downloader/download(_:to:checksum:options:)`` (or a ``DownloadJob``) per download, or
/// once as ``Downloader/Configuration/defaultOptions`` for every download of a downloader.
///
/// ```swift
/// var options = DownloadOptions()
/// options.connections = 8            // segmented, where the server accepts ranges
/// options.retryPolicy.retries = 3
/// options.headers = ["Authorization: Bearer …"]
/// ```
public struct DownloadOptions: Sendable, Equatable {
    /// Connections per file, where the server accepts ranges (1 = one stream).
    public var connections: Int = 1
    /// Retries after transient errors (per part when segmented), with back-off; a server's
    /// `Retry-After` is honoured up to the policy's `maxRetryAfter`.
    public var retryPolicy = RetryPolicy()
    /// Extra request headers, as "Name: value".
    public var headers: [String] = []
    /// The `User-Agent` header.
    public var userAgent: String = "yxdownload/\(YXDownloadVersion.string)"
    /// Give up on a connection attempt after this long.
    public var connectTimeout: TimeInterval = 15
    /// Give up on an attempt when no byte arrived for this long.
    public var stallTimeout: TimeInterval = 30
    /// Check TLS certificates (turn off only for servers you trust, like `curl -k`).
    public var verifyTLS = true
    /// Replace an existing complete file; otherwise the download is skipped.
    public var overwrite = false
    /// Wait until a finished file's bytes are on disk before giving it its final name (batched over
    /// downloads, see the README). With `false` a power cut shortly after a download can leave an empty
    /// or short file under the final name, as with curl, wget and aria2c; a crash of the process alone
    /// never can.
    public var syncBeforeRename = true
    /// Compute the SHA-256 of every finished file (``DownloadResult/sha256``), even without a checksum.
    public var computeSHA256 = false
    /// Whether a download that must wait (a retry's back-off, a server's `Retry-After`) keeps its transfer
    /// slot meanwhile.
    ///
    /// Off (the default): it gives the slot to another download and queues again after the wait, so
    /// downloads that wait never hold others up. On: a one-stream download holds one slot from its first
    /// request to its last byte (to its final name when ``syncBeforeRename`` is off), so a transfer limit
    /// of N means at most N such downloads transferring, as `yxdownload -j N` promises.
    public var keepsSlotWhileWaiting = false
    /// Files smaller than this are never split into segments.
    public var minimumSegmentSize: Int64 = 1 << 20

    /// The defaults: one connection, 5 retries, 15 s to connect, 30 s stall timeout, TLS verified.
    public init() {}
}

extension DownloadOptions {
    /// Whether a header's text (or the user agent) holds a control character other than a tab: a line
    /// break would end the header and start one of its own. Scalar by scalar: `"\r\n"` is one
    /// `Character`, equal to neither `"\r"` nor `"\n"`. A download whose options hold one fails before
    /// any request.
    package static func holdsControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }
    }
}

/// The version of YXDownload and `yxdownload`.
public enum YXDownloadVersion {
    public static let string = "1.0.0"
}
