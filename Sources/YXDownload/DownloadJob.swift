import Foundation
import YXQueue

/// Downloads one URL to one file: resumable, segmented, retried, verified; the file appears under its
/// final name only when it is whole.
///
/// ```swift
/// let job = DownloadJob(url: URL(string: "https://example.com/big.iso")!,
///                       directory: URL(fileURLWithPath: "downloads"))
/// let result = try await job.run() as? DownloadResult
/// print(result?.file.path ?? "")
/// ```
///
/// Bytes arrive in `NAME.part` beside the final file, with a small sidecar `NAME.part.meta`. A failed or
/// canceled download keeps both; starting the same download again resumes with a `Range` request
/// validated by `If-Range`. The job's result is a ``DownloadResult``; its error a ``DownloadError``.
/// Byte-level progress is in ``progressSnapshot``; the job's `progress` (inherited from `Job`) is the
/// fraction of this attempt's bytes.
public final class DownloadJob: Job, @unchecked Sendable {
    /// What to download.
    public let url: URL
    /// The final file.
    public let destination: URL
    /// The expected digest, if any; a mismatch deletes the `.part` and fails the job.
    public let checksum: Checksum?
    /// How it downloads: connections, retries, timeouts, headers, TLS.
    public let options: DownloadOptions
    /// The engine that runs its transfers.
    public let engine: TransferEngine

    /// Creates a download into a directory, named after the URL (see ``FileNaming``).
    public convenience init(
        url: URL,
        directory: URL,
        checksum: Checksum? = nil,
        options: DownloadOptions = DownloadOptions(),
        engine: TransferEngine = .shared,
        tag: Int = 0,
        callbackQueue: DispatchQueue = .global(qos: .utility)
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
    ///   - engine: The transfer engine (default: the process-wide one).
    ///   - tag: A number of your choosing, to tell jobs apart.
    ///   - callbackQueue: Where the job's callbacks are delivered (see `Job.callbackQueue`).
    public init(
        url: URL,
        to file: URL,
        checksum: Checksum? = nil,
        options: DownloadOptions = DownloadOptions(),
        engine: TransferEngine = .shared,
        tag: Int = 0,
        callbackQueue: DispatchQueue = .global(qos: .utility)
    ) {
        self.url = url
        self.destination = file
        self.checksum = checksum
        self.options = options
        self.engine = engine
        super.init(tag: tag, callbackQueue: callbackQueue)
    }

    /// The manager that builds the probe → parts → finalize graph.
    public override class var managerType: JobManager.Type { DownloadJobManager.self }
    /// `"download"`.
    public override var jobType: String { "download" }

    /// Bytes done, length and speed of the current (or last) attempt.
    public var progressSnapshot: DownloadProgress {
        (manager as? DownloadJobManager)?.session?.progress ?? DownloadProgress(bytes: 0, total: nil, bytesPerSecond: 0)
    }

    /// The result, once the job finished.
    public var downloadResult: DownloadResult? { result as? DownloadResult }

    var probeModel: OperationModel {
        OperationModel(type: "yxdownload.probe", maxConcurrentOperationCount: options.maxConcurrentTransfers)
    }
    var transferModel: OperationModel {
        OperationModel(type: "yxdownload.transfer", maxConcurrentOperationCount: options.maxConcurrentTransfers)
    }
    var finalizeModel: OperationModel {
        OperationModel(type: "yxdownload.finalize", maxConcurrentOperationCount: max(1, options.maxConcurrentTransfers))
    }
}
