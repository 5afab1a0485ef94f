import Foundation

/// How a ``DownloadJob`` downloads: connections, retries, timeouts, headers, TLS.
///
/// ```swift
/// var options = DownloadOptions()
/// options.connections = 8            // segmented, where the server accepts ranges
/// options.retry.retries = 3
/// options.headers = ["Authorization: Bearer …"]
/// ```
public struct DownloadOptions: Sendable, Equatable {
    /// Connections per file, where the server accepts ranges (1 = one stream).
    public var connections: Int = 1
    /// Retries after transient errors (per part when segmented).
    public var retry = RetryPolicy()
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
    /// Files smaller than this are never split into segments.
    public var minimumSegmentSize: Int64 = 1 << 20
    /// How many transfers of all download jobs may run at once on a dispatcher; the first download job
    /// on a dispatcher sets it.
    public var maxConcurrentTransfers = 16

    /// The defaults: one connection, 5 retries, 15 s to connect, 30 s stall timeout, TLS verified.
    public init() {}
}

/// The version of YXDownload and `yxdownload`.
public enum YXDownloadVersion {
    public static let string = "0.1.0"
}
