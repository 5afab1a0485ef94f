import Foundation

/// What a finished ``DownloadJob`` produced.
public struct DownloadResult: Sendable, Equatable {
    /// What happened to the file.
    public enum Outcome: String, Sendable, Equatable {
        /// Downloaded (in whole or resumed) and renamed to its final name.
        case downloaded
        /// A complete `.part` from an earlier run was verified and renamed, with no request.
        case finalizedPart
        /// The file existed and ``DownloadOptions/overwrite`` was off: nothing was requested.
        case skippedExisting
    }

    /// What happened to the file.
    public var outcome: Outcome
    /// The URL, without credentials.
    public var url: String
    /// The final file.
    public var file: URL
    /// The size of the final file.
    public var bytes: Int64
    /// Bytes received from the network in this run.
    public var bytesReceived: Int64
    /// Bytes that were already in the `.part` when this run began.
    public var resumedFrom: Int64
    /// The SHA-256 of the file, when it was computed.
    public var sha256: String?

    /// Creates a result (for tests and custom reporters; ``DownloadJob`` makes its own).
    public init(
        outcome: Outcome, url: String, file: URL, bytes: Int64, bytesReceived: Int64, resumedFrom: Int64, sha256: String?
    ) {
        self.outcome = outcome
        self.url = url
        self.file = file
        self.bytes = bytes
        self.bytesReceived = bytesReceived
        self.resumedFrom = resumedFrom
        self.sha256 = sha256
    }
}
