import YXQueue

/// The dispatcher queues a download's operations run on, and the limits that suit them.
///
/// A ``Downloader`` sets these limits on its dispatcher. To run ``DownloadJob``s on a dispatcher of your
/// own, give it the limits when you make it:
///
/// ```swift
/// let dispatcher = Dispatcher(name: "app", queues: DownloadQueue.limits(transfers: 8).merging(["cpu": 2]) { $1 })
/// ```
public enum DownloadQueue {
    /// The first step of a segmented download (a small request for length and ranges).
    public static let probe = "yxdownload.probe"
    /// Transfers: one-stream downloads and the parts of segmented ones.
    public static let transfer = "yxdownload.transfer"
    /// Verify, flush and rename, when it was not done by the transfer itself: a download there has
    /// given its transfer slot to the next one.
    public static let finalize = "yxdownload.finalize"
    /// Waits before a retry or for a `Retry-After`: no thread and no transfer slot, so no useful limit.
    public static let wait = "yxdownload.wait"

    /// The limits of the download queues for at most `transfers` transfers at once, and up to four
    /// times as many files being verified, flushed to disk and renamed meanwhile: each of those holds
    /// its `.part` open, and many of them share one flush.
    public static func limits(transfers: Int) -> [String: Int] {
        let transfers = max(1, transfers)
        return [probe: transfers, transfer: transfers, finalize: 4 * transfers, wait: 1 << 30]
    }
}
