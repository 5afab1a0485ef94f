import Foundation

extension Downloader {
    /// What a ``Downloader`` is made with: how many transfers at once, how many threads, the speed limit,
    /// and the options of downloads that do not bring their own.
    ///
    /// ```swift
    /// var configuration = Downloader.Configuration(maxConcurrentTransfers: 8, maxBytesPerSecond: 4 << 20)
    /// configuration.defaultOptions.retryPolicy.retries = 10
    /// let downloader = Downloader(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// A name for logs (metadata `downloader`) and metrics (dimension `downloader`), and for the
        /// dispatcher the downloader makes.
        public var name: String
        /// Transfers at once, over all downloads; each part of a segmented download is one transfer.
        /// More downloads wait in line, without a thread.
        public var maxConcurrentTransfers: Int
        /// Threads that run transfers (see ``TransferEngine``); at least 1.
        public var lanes: Int
        /// The overall speed limit in bytes per second, shared by all transfers (`nil`: none).
        public var maxBytesPerSecond: Int?
        /// How long a lane keeps its thread and its idle connections without work, in seconds.
        public var laneIdleTimeout: TimeInterval
        /// The options of downloads started without options of their own.
        public var defaultOptions: DownloadOptions
        /// Whether to log curl's own account of each transfer at trace: connections made or reused, HTTP
        /// version, TLS, header lines (credentials redacted), as `curl -v` prints them. Costs time: for
        /// diagnosis (`yxdownload -vv`). Only when the downloader's logger takes trace lines.
        public var logsConnectionDetails = false

        /// Creates a configuration; every value has a default.
        ///
        /// - Parameters:
        ///   - name: For logs and metrics (default `"yxdownload"`).
        ///   - maxConcurrentTransfers: Transfers at once (default 16).
        ///   - lanes: Threads that run transfers (default ``TransferEngine/defaultLaneCount``).
        ///   - maxBytesPerSecond: The overall speed limit (default none).
        ///   - laneIdleTimeout: How long an idle lane keeps its thread (default
        ///     ``TransferEngine/defaultIdleTimeout``, 10 s).
        ///   - defaultOptions: The options of downloads that bring none (default `DownloadOptions()`).
        public init(
            name: String = "yxdownload",
            maxConcurrentTransfers: Int = 16,
            lanes: Int = TransferEngine.defaultLaneCount,
            maxBytesPerSecond: Int? = nil,
            laneIdleTimeout: TimeInterval = TransferEngine.defaultIdleTimeout,
            defaultOptions: DownloadOptions = DownloadOptions()
        ) {
            self.name = name
            self.maxConcurrentTransfers = maxConcurrentTransfers
            self.lanes = lanes
            self.maxBytesPerSecond = maxBytesPerSecond
            self.laneIdleTimeout = laneIdleTimeout
            self.defaultOptions = defaultOptions
        }
    }
}
