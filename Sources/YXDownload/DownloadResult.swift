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
    public var file: URL {
        get { location.url }
        set { location = FileLocation(url: newValue) }
    }
    /// The final file's path, and its URL if the job was given one (see ``FileLocation``).
    var location: FileLocation
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
        self.init(
            outcome: outcome, url: url, location: FileLocation(url: file), bytes: bytes, bytesReceived: bytesReceived,
            resumedFrom: resumedFrom, sha256: sha256)
    }

    init(
        outcome: Outcome, url: String, location: FileLocation, bytes: Int64, bytesReceived: Int64, resumedFrom: Int64,
        sha256: String?
    ) {
        self.outcome = outcome
        self.url = url
        self.location = location
        self.bytes = bytes
        self.bytesReceived = bytesReceived
        self.resumedFrom = resumedFrom
        self.sha256 = sha256
    }

    /// Equal when every field is, the file compared as a URL (one result may hold the URL its job was
    /// given, the other only the path).
    public static func == (lhs: DownloadResult, rhs: DownloadResult) -> Bool {
        lhs.outcome == rhs.outcome && lhs.url == rhs.url && lhs.bytes == rhs.bytes
            && lhs.bytesReceived == rhs.bytesReceived && lhs.resumedFrom == rhs.resumedFrom && lhs.sha256 == rhs.sha256
            && (lhs.location == rhs.location || lhs.file == rhs.file)
    }
}
