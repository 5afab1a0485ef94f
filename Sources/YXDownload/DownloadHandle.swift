import YXQueue

/// A download under way, as ``Downloader/start(_:to:checksum:options:)`` returns it: its typed result,
/// its byte progress, and a way to cancel it.
///
/// ```swift
/// let handle = downloader.start(url, into: folder)
/// Task { for await progress in handle.progressUpdates() { bar.update(progress) } }
/// do {
///     let result = try await handle.value          // DownloadResult
///     print("saved", result.file.path)
/// } catch is CancellationError {
///     print("canceled; the .part stays for next time")
/// }
/// ```
///
/// The handle keeps its ``Downloader`` alive. The class-layer ``DownloadJob`` behind it is ``job``
/// (delegates, closure observers, restart).
public struct DownloadHandle: Sendable {
    /// The job that runs the download.
    public let job: DownloadJob
    /// The downloader that runs it: held, so it lives while the handle does.
    let downloader: Downloader

    init(job: DownloadJob, downloader: Downloader) {
        self.job = job
        self.downloader = downloader
    }

    /// The result, once the file is whole under its final name, waiting for it.
    ///
    /// Cancelling the awaiting task ends the wait (with `CancellationError`) but not the download: call
    /// ``cancel()`` for that.
    ///
    /// - Throws: A ``DownloadError``, or `CancellationError` when the download was canceled.
    public var value: DownloadResult {
        get async throws { try DownloadJob.downloadResult(from: try await job.value) }
    }

    /// The result, once the download finished.
    public var result: DownloadResult? { job.downloadResult }

    /// The current state (executing, finished, failed, canceled).
    public var state: JobState { job.state }

    /// Bytes done, length and speed, now.
    public var progress: DownloadProgress { job.progressSnapshot }

    /// The byte progress as it changes, at most once per `interval`, until the download ends (see
    /// ``DownloadProgressUpdates``).
    public func progressUpdates(every interval: Duration = .milliseconds(100)) -> DownloadProgressUpdates {
        job.progressUpdates(every: interval)
    }

    /// Cancels the download; its `.part` stays, so downloading the same file again resumes it. Safe at
    /// any moment, any number of times.
    public func cancel() {
        job.cancel()
    }
}
