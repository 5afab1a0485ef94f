/// A snapshot of a download's progress, for progress bars.
public struct DownloadProgress: Sendable, Equatable {
    /// Bytes of the file that are done (including bytes resumed from an earlier run).
    public var bytes: Int64
    /// The file's length, once known.
    public var total: Int64?
    /// Bytes received over the last few seconds, per second.
    public var bytesPerSecond: Double
    /// Bytes received from the network by this attempt (``bytes`` also counts bytes resumed from disk).
    public var bytesReceived: Int64

    /// Creates a snapshot.
    public init(bytes: Int64, total: Int64?, bytesPerSecond: Double, bytesReceived: Int64 = 0) {
        self.bytes = bytes
        self.total = total
        self.bytesPerSecond = bytesPerSecond
        self.bytesReceived = bytesReceived
    }

    /// The fraction done, once the length is known.
    public var fraction: Double? {
        guard let total else { return nil }
        return total == 0 ? 1 : min(1, Double(bytes) / Double(total))
    }
}
