import Foundation
@_spi(YXQueueInternals) import YXQueue

/// Downloads one URL to one file: resumable, segmented, retried, verified; the file appears under its
/// final name only when it is whole.
///
/// This is the class layer, for programs that use YXQueue's `Job` API (delegates, closure observers,
/// restart, a dispatcher of their own). Most programs use a ``Downloader`` instead, which makes and
/// starts these jobs and returns typed results:
///
/// ```swift
/// let job = DownloadJob(url: URL(string: "https://example.com/big.iso")!,
///                       into: URL(fileURLWithPath: "downloads"))
/// let token = job.onFail { _, error in print("failed:", error) }
/// job.start(on: dispatcher)                        // a Dispatcher with DownloadQueue.limits(transfers:)
/// for await progress in job.progressUpdates() { print(progress.bytes, "of", progress.total ?? -1) }
/// print(job.downloadResult?.file.path ?? "no file")
/// ```
///
/// Bytes arrive in `NAME.part` beside the final file, which keeps its resume state (an extended
/// attribute for one stream, a small sidecar `NAME.part.meta` for several parts). A failed or canceled
/// download keeps them; starting the same download again resumes with a `Range` request
/// validated by `If-Range`. The job's result is a ``DownloadResult`` (``downloadResult``); its error a
/// ``DownloadError``. Byte-level progress is in ``progressSnapshot`` and ``progressUpdates(every:)``; the
/// job's `progress` (inherited from `Job`) is the fraction of this attempt's bytes.
public final class DownloadJob: Job, @unchecked Sendable {
    /// What to download.
    public let url: URL
    /// The final file.
    public var destination: URL { location.url }
    /// The expected digest, if any; a mismatch deletes the `.part` and fails the job.
    public let checksum: Checksum?
    /// How it downloads: connections, retries, timeouts, headers, TLS.
    public let options: DownloadOptions
    /// The engine that runs its transfers (and holds its host holds, disk flushes, logger and metrics).
    public let engine: TransferEngine
    /// Whether the maker knew that the file, its `.part` and its sidecar were absent.
    let destinationIsFresh: Bool
    /// The final file's path, made once (`URL.path` costs about 3,000 instructions on Linux), and its
    /// URL (made only when asked for, when the maker gave the path alone).
    let location: FileLocation

    /// Creates a download into a directory, named after the URL (see ``FileNaming``).
    ///
    /// - Parameters:
    ///   - url: An http or https URL.
    ///   - directory: Where the file goes (created if needed); the name comes from the URL.
    ///   - checksum: The expected digest.
    ///   - options: Connections, retries, timeouts, headers, TLS.
    ///   - engine: The transfer engine (default: ``TransferEngine/shared``, whose threads end when idle).
    ///   - tag: A number of your choosing, to tell jobs apart.
    ///   - callbackQueue: Where the job's callbacks are delivered (see `Job.callbackQueue`).
    public convenience init(
        url: URL,
        into directory: URL,
        checksum: Checksum? = nil,
        options: DownloadOptions = DownloadOptions(),
        engine: TransferEngine = .shared,
        tag: Int = 0,
        callbackQueue: DispatchQueue = Job.defaultCallbackQueue
    ) {
        self.init(
            url: url, to: directory.appendingPathComponent(FileNaming.name(for: url)), checksum: checksum,
            options: options, engine: engine, tag: tag, callbackQueue: callbackQueue)
    }

    /// Creates a download to a file.
    ///
    /// - Parameters:
    ///   - url: An http or https URL.
    ///   - file: Where the file goes (its directory is created if needed).
    ///   - checksum: The expected digest.
    ///   - options: Connections, retries, timeouts, headers, TLS.
    ///   - engine: The transfer engine (default: ``TransferEngine/shared``, whose threads end when idle).
    ///   - tag: A number of your choosing, to tell jobs apart.
    ///   - callbackQueue: Where the job's callbacks are delivered (see `Job.callbackQueue`).
    public convenience init(
        url: URL,
        to file: URL,
        checksum: Checksum? = nil,
        options: DownloadOptions = DownloadOptions(),
        engine: TransferEngine = .shared,
        tag: Int = 0,
        callbackQueue: DispatchQueue = Job.defaultCallbackQueue
    ) {
        self.init(
            url: url, to: FileLocation(url: file), checksum: checksum, options: options, engine: engine, tag: tag,
            callbackQueue: callbackQueue, destinationIsFresh: false)
    }

    /// Creates a download to a file named by its path, which the caller knows is absent, with its
    /// `.part` and its sidecar (it listed the folder, as `yxdownload` does once per folder): the first
    /// step creates the `.part` without looking for the three files first, which saves three failing
    /// lookups per file. On Linux the `.part` starts without a name (see
    /// `DownloadSession+UnnamedPart.swift`), and one that appeared meanwhile is left alone: the file is
    /// downloaded whole. Elsewhere the `.part` is created exclusively, and should it have appeared
    /// meanwhile, the step looks at the disk as usual. ``destination`` is made from `path` when asked
    /// for (see ``FileLocation``).
    package convenience init(
        url: URL,
        toPath path: String,
        checksum: Checksum?,
        options: DownloadOptions,
        engine: TransferEngine,
        callbackQueue: DispatchQueue,
        destinationIsFresh: Bool
    ) {
        self.init(
            url: url, to: FileLocation(path: path), checksum: checksum, options: options, engine: engine,
            callbackQueue: callbackQueue, destinationIsFresh: destinationIsFresh)
    }

    init(
        url: URL,
        to file: FileLocation,
        checksum: Checksum?,
        options: DownloadOptions,
        engine: TransferEngine,
        tag: Int = 0,
        callbackQueue: DispatchQueue,
        destinationIsFresh: Bool
    ) {
        self.url = url
        self.location = file
        self.checksum = checksum
        self.options = options
        self.engine = engine
        self.destinationIsFresh = destinationIsFresh
        super.init(tag: tag, callbackQueue: callbackQueue)
    }

    /// Called when an attempt's bytes are all in and the download only waits for its flush to disk before
    /// the rename (``DownloadOptions/syncBeforeRename``, the default); not called without that wait. From
    /// then on the download holds no transfer slot. Called at most once per attempt, before the flush, on
    /// the thread that finalizes (the one that finished the transfer, or a pool thread after a digest):
    /// keep it short, and never block. Its argument is the download's progress then (all its bytes). Set
    /// it before the job starts. `yxdownload worker` uses it to claim the next download meanwhile.
    ///
    /// ```swift
    /// job.onSaving = { progress in print("\(progress.bytes) bytes in; flushing") }
    /// ```
    public var onSaving: (@Sendable (DownloadProgress) -> Void)? {
        get { savingHandler.withLock { $0 } }
        set { savingHandler.withLock { $0 = newValue } }
    }
    private let savingHandler = Locked<(@Sendable (DownloadProgress) -> Void)?>(nil)

    /// The manager that builds the probe → parts → finalize graph.
    public override class var managerClass: JobManager.Type { DownloadJobManager.self }
    /// `"download"`.
    public override var name: String { "download" }

    /// Bytes done, length and speed of the current (or last) attempt, now.
    public var progressSnapshot: DownloadProgress {
        (manager as? DownloadJobManager)?.session?.progress ?? DownloadProgress(bytes: 0, total: nil, bytesPerSecond: 0)
    }

    /// The result, once the job finished.
    public var downloadResult: DownloadResult? { result as? DownloadResult }

    /// The byte progress of the job, as it changes, until the job ends (see ``DownloadProgressUpdates``).
    ///
    /// ```swift
    /// for await progress in job.progressUpdates() {
    ///     print(progress.bytes, "of", progress.total.map(String.init) ?? "?", Int(progress.bytesPerSecond), "B/s")
    /// }
    /// ```
    ///
    /// - Parameter interval: The shortest time between two updates (default a tenth of a second).
    public func progressUpdates(every interval: Duration = .milliseconds(100)) -> DownloadProgressUpdates {
        DownloadProgressUpdates(job: self, interval: interval)
    }

    /// A job's result as a ``DownloadResult``: what ``Downloader`` and ``DownloadHandle`` return.
    static func downloadResult(from value: (any Sendable)?) throws -> DownloadResult {
        if let result = value as? DownloadResult { return result }
        throw JobError.invalidOperation("a download job ended without a DownloadResult")
    }
}
