import CoreMetrics
import Foundation
import Logging
@_spi(YXQueueInternals) import YXQueue

/// Downloads files over HTTP and HTTPS: the object most programs use. It owns what its downloads share
/// (a ``TransferEngine`` with its threads, connections, host holds, disk flushes and speed limit) and a
/// `Dispatcher` that runs them at most ``Configuration/maxConcurrentTransfers`` transfers at a time.
///
/// ```swift
/// let downloader = Downloader(configuration: .init(maxConcurrentTransfers: 8), logger: logger)
///
/// // Wait for one file:
/// let result = try await downloader.download(url, into: URL(fileURLWithPath: "downloads"))
/// print(result.file.path, result.bytes)
///
/// // Or start one, watch its bytes, and wait for it later:
/// let handle = downloader.start(iso, to: URL(fileURLWithPath: "downloads/debian.iso"), checksum: expected)
/// for await progress in handle.progressUpdates() { print(progress.bytes, "of", progress.total ?? -1) }
/// let iso = try await handle.value                                       // a DownloadResult: no cast
/// ```
///
/// Every download is resumable (a `.part` file and a small sidecar beside the final name), retried on
/// transient errors, verified (length, and checksum when given) and renamed to its final name only when
/// whole; see ``DownloadOptions`` for connections, retries, timeouts and headers.
///
/// Lifetime: a downloader holds no thread while nothing downloads (its engine's lanes end their threads
/// when idle). ``shutdown()``, or releasing the downloader, cancels its running downloads (each keeps its
/// `.part`, so a later download of the same file resumes) and waits until the engine's threads have
/// ended. A ``DownloadHandle`` keeps its downloader alive.
///
/// Logs (through the `Logger` you give): each request and its response's status at trace (curl's own
/// connection details too, with ``Configuration/logsConnectionDetails``), renames at debug, retries and
/// resumes at info, failed downloads at warning; the dispatcher it makes adds the jobs' lifecycle at
/// debug. Metrics (through the
/// `MetricsFactory` you give, or the process's `MetricsSystem`): counters `yxdownload.bytes` and
/// `yxdownload.retries` with the dimension `downloader`, and the dispatcher's `yxqueue.*` counters and
/// timers for the job name `download`.
///
/// - Note: Every method is safe to call from any thread.
public final class Downloader: Sendable {
    /// The dispatcher that runs the downloads: the one given to ``init(configuration:dispatcher:logger:metricsFactory:)``,
    /// or one the downloader made. Its download queues (``DownloadQueue``) have the downloader's limits.
    public let dispatcher: Dispatcher
    /// The engine that runs the transfers, owned by the downloader.
    public let engine: TransferEngine
    /// The options of downloads started without options of their own (``Configuration/defaultOptions``).
    public let defaultOptions: DownloadOptions

    private let state = Locked(State())

    private struct State {
        var isShutDown = false
    }

    /// Creates a downloader with its own transfer engine. No thread starts until the first download.
    ///
    /// - Parameters:
    ///   - configuration: Transfers at once, threads, the speed limit, default options.
    ///   - dispatcher: A dispatcher of yours to run the downloads on, next to your other jobs: the
    ///     downloader sets the limits of the download queues on it (``DownloadQueue/limits(transfers:)``).
    ///     By default the downloader makes its own, with your logger and metrics factory.
    ///   - logger: Where to log (default: nowhere, as a library should).
    ///   - metricsFactory: Where counters and timers go (default: the process's `MetricsSystem`).
    public init(
        configuration: Configuration = Configuration(),
        dispatcher: Dispatcher? = nil,
        logger: Logger = Dispatcher.silentLogger,
        metricsFactory: (any MetricsFactory)? = nil
    ) {
        engine = TransferEngine(
            name: configuration.name, lanes: configuration.lanes, idleTimeout: configuration.laneIdleTimeout,
            logger: logger, metricsFactory: metricsFactory, logsConnectionDetails: configuration.logsConnectionDetails)
        if let limit = configuration.maxBytesPerSecond { engine.setMaxSpeed(bytesPerSecond: limit) }
        let limits = DownloadQueue.limits(transfers: configuration.maxConcurrentTransfers)
        if let dispatcher {
            for (queue, limit) in limits { dispatcher.setLimit(limit, for: queue) }
            self.dispatcher = dispatcher
        } else {
            self.dispatcher = Dispatcher(
                name: configuration.name, queues: limits, logger: logger, metricsFactory: metricsFactory)
        }
        defaultOptions = configuration.defaultOptions
    }

    /// Shuts the downloader down (see ``shutdown()``).
    deinit {
        shutdown()
    }

    /// The logger the downloads log to (with the downloader's name in its metadata).
    public var logger: Logger { engine.logger }

    // MARK: - Downloads

    /// Downloads `url` to `file` and returns the result once the file is whole under its final name.
    ///
    /// ```swift
    /// let result = try await downloader.download(url, to: URL(fileURLWithPath: "/tmp/debian.iso"))
    /// ```
    ///
    /// Cancelling the calling task cancels the download; its `.part` stays, and downloading the same file
    /// again resumes it. A file that already exists is not downloaded again (the result says
    /// ``DownloadResult/Outcome/skippedExisting``) unless ``DownloadOptions/overwrite`` is set.
    ///
    /// - Parameters:
    ///   - url: An http or https URL.
    ///   - file: Where the file goes (its directory is created if needed).
    ///   - checksum: The expected digest, checked before the rename; a mismatch fails the download.
    ///   - options: This download's options (default: ``defaultOptions``).
    /// - Returns: What was downloaded: the file, its size, the bytes received, the SHA-256 when computed.
    /// - Throws: A ``DownloadError``, or `CancellationError` when the download was canceled (also when the
    ///   downloader was shut down).
    public func download(
        _ url: URL, to file: URL, checksum: Checksum? = nil, options: DownloadOptions? = nil
    ) async throws -> DownloadResult {
        let job = DownloadJob(url: url, to: file, checksum: checksum, options: options ?? defaultOptions, engine: engine)
        guard !isShutDown else { throw CancellationError() }
        return try DownloadJob.downloadResult(from: try await job.run(on: dispatcher))
    }

    /// Downloads `url` into `directory`, under the name the URL gives (see ``FileNaming``), and returns
    /// the result once the file is whole (see ``download(_:to:checksum:options:)``).
    ///
    /// ```swift
    /// let result = try await downloader.download(url, into: URL(fileURLWithPath: "downloads"))
    /// ```
    public func download(
        _ url: URL, into directory: URL, checksum: Checksum? = nil, options: DownloadOptions? = nil
    ) async throws -> DownloadResult {
        try await download(
            url, to: directory.appendingPathComponent(FileNaming.name(for: url)), checksum: checksum, options: options)
    }

    /// Starts downloading `url` to `file` and returns at once with a handle: its typed ``DownloadHandle/value``,
    /// its byte progress, ``DownloadHandle/cancel()``.
    ///
    /// ```swift
    /// let handle = downloader.start(url, to: file)
    /// let result = try await handle.value
    /// ```
    ///
    /// On a downloader that was shut down, the download never starts: its value throws
    /// `CancellationError`.
    ///
    /// - Parameters:
    ///   - url: An http or https URL.
    ///   - file: Where the file goes (its directory is created if needed).
    ///   - checksum: The expected digest, checked before the rename.
    ///   - options: This download's options (default: ``defaultOptions``).
    @discardableResult
    public func start(
        _ url: URL, to file: URL, checksum: Checksum? = nil, options: DownloadOptions? = nil
    ) -> DownloadHandle {
        let job = DownloadJob(url: url, to: file, checksum: checksum, options: options ?? defaultOptions, engine: engine)
        if isShutDown {
            job.drop()  // whoever awaits it hears CancellationError
        } else {
            job.start(on: dispatcher)
        }
        return DownloadHandle(job: job, downloader: self)
    }

    /// Starts downloading `url` into `directory`, under the name the URL gives (see ``FileNaming``); see
    /// ``start(_:to:checksum:options:)``.
    @discardableResult
    public func start(
        _ url: URL, into directory: URL, checksum: Checksum? = nil, options: DownloadOptions? = nil
    ) -> DownloadHandle {
        start(url, to: directory.appendingPathComponent(FileNaming.name(for: url)), checksum: checksum, options: options)
    }

    // MARK: - Control

    /// Limits the total download speed of all transfers (`nil`: no limit), from now on.
    public func setMaxSpeed(bytesPerSecond: Int?) {
        engine.setMaxSpeed(bytesPerSecond: bytesPerSecond)
    }

    /// Changes how many transfers run at once, from now on: a higher limit starts waiting downloads at
    /// once; a lower one lets running transfers finish.
    public func setMaxConcurrentTransfers(_ count: Int) {
        for (queue, limit) in DownloadQueue.limits(transfers: count) { dispatcher.setLimit(limit, for: queue) }
    }

    /// Cancels every download of this downloader that is under way; each keeps its `.part`, so downloading
    /// the same file again resumes it. Other jobs of the dispatcher go on.
    public func cancelAll() {
        let downloads = dispatcher.activeJobs.compactMap { $0 as? DownloadJob }.filter { $0.engine === engine }
        // Waiting ones first: canceling a running one frees its slot, which would start a waiting one
        // only to cancel it (and it would then count as started).
        for download in downloads where download.state == .ready { download.cancel() }
        for download in downloads { download.cancel() }
    }

    /// Stops the downloader for good: cancels its running downloads (each keeps its `.part`, to resume),
    /// and returns once every thread of its engine has ended. Downloads started afterwards are canceled at
    /// once. Idempotent; releasing the downloader does the same.
    ///
    /// The canceled downloads' last events (and the `CancellationError` of whoever awaits them) may arrive
    /// just after this returns, on their callback queues.
    public func shutdown() {
        state.withLock { $0.isShutDown = true }
        cancelAll()
        engine.shutdown()
    }

    /// Whether ``shutdown()`` was called.
    public var isShutDown: Bool { state.withLock { $0.isShutDown } }
}
