import Foundation
import YXDownloadCLI
import YXDownload
import YXJobStore
@_spi(YXQueueInternals) import YXQueue
import YXTerminal

/// Runs the stored downloads a `yxdownload worker` claims (``StoredDownload``): each becomes a
/// `DownloadJob` on the worker's downloader, into the worker's folder, so a `.part` that an earlier
/// attempt kept there (this worker's or a dead one's) is resumed.
///
/// How an attempt ends decides the stored outcome (``JobRunner``):
/// - the file is whole under its final name, or already was (skipped): succeeded, with its size as the
///   job's progress and a small result;
/// - the download failed after its own retries (`--retries`, within the attempt): failed for good, with
///   the message the plain command prints, unless the error was transient (a server down, a timeout)
///   and the job has attempts left: then it is queued again after the store's back-off
///   (``StoredDownload/storeRetryPolicy``);
/// - the worker stopped the attempt (shutdown, a cancel recorded in the store, a lost lease): the
///   download is canceled, keeps its `.part`, and the call returns once the download has ended, so no
///   other worker writes the same `.part` while this one still does;
/// - the worker's own disk or folder failed (no space, a read-only or failing disk, its `-d` no longer
///   writable): the job is given back uncounted (`JobRelease`), for another worker, and this worker
///   stops;
/// - another process wrote the `.part` for longer than `--lease`: the job is given back uncounted for
///   `--lease` (see ``waitWhileAnotherProcessWrites(_:id:item:)``).
///
/// Parameters that do not decode, or a path that would leave the folder, discard the job.
final class DownloadJobRunner: JobRunner {
    /// The result stored with a succeeded download.
    struct Result: Codable, Sendable {
        var outcome: String
        var bytes: Int64
        var bytesReceived: Int64
        var resumedFrom: Int64
    }

    private let downloader: Downloader
    private let directory: URL
    private let directoryText: String
    /// The worker's options (`-x`); each download's stored options are set on a copy.
    private let options: DownloadOptions
    private let reporter: SharedReporter
    /// How long a download waits for another process's `.part` before its job goes back to the queue,
    /// and for how long it goes (the worker's `--lease`, see ``waitWhileAnotherProcessWrites``).
    private let partWait: Duration
    private let started = DispatchTime.now()
    /// What this worker did, for its summary and exit status.
    let totals = Locked(RunTotals())
    /// Whether the worker began to stop (a signal): a wait for another process's `.part` ends.
    let isStopping = Locked(false)

    init(
        downloader: Downloader, directory: URL, directoryText: String, options: DownloadOptions, reporter: SharedReporter,
        partWait: Duration
    ) {
        self.downloader = downloader
        self.directory = directory
        self.directoryText = directoryText
        self.options = options
        self.reporter = reporter
        self.partWait = partWait
    }

    var jobNames: [String] { [StoredDownload.jobName] }

    func run(_ job: ClaimedJob, context: StoredJobContext) async throws -> Data? {
        let download: StoredDownload
        do {
            download = try JSONDecoder().decode(StoredDownload.self, from: job.payload)
        } catch {
            throw discard(job, "its parameters cannot be read (\(Self.shortDescription(of: error))): stored by another version?", nil)
        }
        guard let url = URL(string: download.url), ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
            throw discard(job, "not an http or https URL", download)
        }
        guard !download.path.isEmpty,
            download.path.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && !$0.contains("/") && !$0.contains("\0") })
        else {
            throw discard(job, "the file would leave the output folder", download)
        }
        // A name as `enqueue` makes them (SPEC §4): a job written by another program may hold anything.
        // Invisible characters are let through: an older `enqueue` kept them, and its jobs (their `.part`
        // files too) keep the names they were queued with (found by a review: they were discarded).
        guard download.path.allSatisfy({ FileNaming.sanitize($0, keepingInvisible: true) == $0 }) else {
            throw discard(job, "the file's name holds characters a name may not have (control characters, '\\' or marks that reorder text)", download)
        }
        var checksum: Checksum?
        if let text = download.checksum {
            guard let parsed = Checksum(parsing: text) else { throw discard(job, "bad checksum \(PrintableText.escaped(text))", download) }
            checksum = parsed
        }
        var options = self.options
        download.options.apply(to: &options)
        let file = download.path.reduce(directory) { $0.appendingPathComponent($1) }
        // Printed escaped: a name stored by an older version may hold invisible characters (see above).
        let item = DownloadItem(
            url: download.redactedURL, file: display(PrintableText.escaped(download.relativePath)),
            name: PrintableText.escaped(download.path[download.path.count - 1]))

        let downloadJob = DownloadJob(url: url, to: file, checksum: checksum, options: options, engine: downloader.engine)
        // The bytes, for `yxdownload status` (the worker writes them at most once per progress interval).
        let id = job.id.rawValue
        // Its bytes in, it only waits for the disk: another download may transfer in its place. The bars
        // learn it now (the progress updates come every 0.2 s: a small file would show as transferring,
        // and "running" over -j); from a task, since this is the transfer thread, and the reporter's lock
        // is held while a terminal is drawn.
        downloadJob.onSaving = { [reporter] progress in
            context.releaseSlot()
            Task { reporter.progressed(id, progress) }
        }
        reporter.started(id, item)
        if download.path.count > 1,
            let link = OutputDirectory.symbolicLink(under: directory.path, folders: Array(download.path.dropLast()))
        {
            // A link there would lead the file out of the folder: this download fails, as a plain run's would.
            let message = OutputDirectory.linkedFolderMessage(display(link))
            totals.withLock { $0.failed += 1 }
            reporter.failed(id, item, DownloadFailure(message: message, httpStatus: nil))
            throw JobHandlerError.doNotRetry(message)
        }
        let progress = Task { [reporter] in
            for await update in downloadJob.progressUpdates(every: .milliseconds(200)) {
                context.reportProgress(completedUnits: update.bytes, totalUnits: update.total)
                reporter.progressed(id, update)
            }
        }
        defer { progress.cancel() }
        let begin = DispatchTime.now().uptimeNanoseconds
        do {
            try await waitWhileAnotherProcessWrites(file.path + ".part", id: id, item: item)
            // Cancelling this task (the worker stopping the attempt) cancels the download, and the call
            // returns only once it has ended: its `.part` is closed before another worker may claim it.
            guard let result = try await downloadJob.run(on: downloader.dispatcher) as? DownloadResult else {
                throw JobHandlerError.doNotRetry("the download ended without a result")
            }
            context.reportProgress(completedUnits: result.bytes, totalUnits: result.bytes)
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e9
            if result.outcome == .skippedExisting {
                totals.withLock { $0.skipped += 1 }
                reporter.skipped(id, item)
            } else {
                totals.withLock {
                    $0.done += 1
                    $0.bytes += result.bytesReceived
                }
                reporter.finished(id, item, result: result, seconds: seconds)
            }
            return try? JSONEncoder().encode(
                Result(
                    outcome: result.outcome.rawValue, bytes: result.bytes, bytesReceived: result.bytesReceived,
                    resumedFrom: result.resumedFrom))
        } catch let error as DownloadError {
            // An attempt that goes back to the store reads without advice on trying again: the store does.
            func message(_ context: FailureMessage.Context) -> String {
                FailureMessage.text(for: error, file: item.file, retries: options.retryPolicy.retries, context: context)
            }
            if isLocalFault(error) {
                // This worker's disk or folder, not the download: another worker may well do it. The job
                // goes back to the queue uncounted, and this worker stops claiming.
                let reason = message(.requeued)
                totals.withLock { $0.bytes += downloadJob.progressSnapshot.bytesReceived }
                reporter.failed(
                    id, item, DownloadFailure(message: reason + "; given back to the queue", httpStatus: nil, isFinal: false))
                onLocalFault.withLock { $0 }?(reason)
                throw JobRelease(reason)
            }
            // A `.part` that another process took between the check before the download and the
            // download's own lock (a run started in that moment): given back uncounted for a lease, as
            // after a wait (found by a review: it spent an attempt, and could fail the job for good).
            if error.kind == .fileSystem && error.message.hasSuffix(DownloadError.partInUseReason) {
                totals.withLock { $0.bytes += downloadJob.progressSnapshot.bytesReceived }
                throw givenBackForALease(id, item)
            }
            // A transient error that outlasted the downloader's own retries (a server down for a while)
            // gets another attempt later, after the store's back-off, while attempts are left; any other
            // error fails for good: trying again would not help.
            if error.isTransient && job.failures < job.retry.retries {
                totals.withLock { $0.bytes += downloadJob.progressSnapshot.bytesReceived }
                reporter.failed(
                    id, item,
                    DownloadFailure(message: message(.requeued) + "; queued again for a later attempt", httpStatus: error.httpStatus, isFinal: false))
                throw error
            }
            totals.withLock {
                $0.failed += 1
                $0.bytes += downloadJob.progressSnapshot.bytesReceived
            }
            let reason = message(.queue)
            reporter.failed(id, item, DownloadFailure(message: reason, httpStatus: error.httpStatus))
            throw JobHandlerError.doNotRetry(reason)
        } catch {
            if context.stopReason == .leaseLost {
                // Not canceled: the job runs again once its lease expires, and resumes the `.part`. Said,
                // for a download that stops without a word looks lost (found by a review).
                totals.withLock { $0.bytes += downloadJob.progressSnapshot.bytesReceived }
                reporter.failed(id, item, DownloadFailure(message: Self.leaseLostMessage, httpStatus: nil, isFinal: false))
                throw error
            }
            reporter.ended(id)
            if Task.isCancelled || error is CancellationError {
                totals.withLock {
                    $0.canceled += 1
                    $0.bytes += downloadJob.progressSnapshot.bytesReceived
                }
            }
            throw error
        }
    }

    /// Waits, polling each second, while another process downloads into the job's `.part` (a run into
    /// this folder, a worker whose lease ran out and that has not stopped yet): the lease is kept by the
    /// heartbeats meanwhile, and no attempt is spent (found by a review: ten quick requeues, counted as
    /// failures, failed a job whose file another process was still fetching). Says so. A cancel
    /// (a lost lease) ends the wait, and so does the worker's stop (``isStopping``): the job is given
    /// back at once, counted as canceled, instead of holding the worker for its grace period.
    ///
    /// A worker whose lease ran out stops writing within `--lease` seconds. A process that writes longer
    /// is a download of its own (a plain run of a large file), and the job goes back to the queue,
    /// uncounted, for `--lease` seconds (`JobRelease`): this worker's slot serves other downloads
    /// meanwhile, instead of waiting for as long as that download takes.
    private func waitWhileAnotherProcessWrites(_ part: String, id: Int64, item: DownloadItem) async throws {
        guard PartLock.isHeldByAnotherProcess(at: part) else { return }
        let wait = Self.secondsText(partWait)
        reporter.waiting(
            id, item,
            "\(item.file).part is being written by another download of this file (another yxdownload run, or a worker "
                + "sharing the folder); this worker waits for it to end, up to \(wait)")
        let deadline = ContinuousClock.now + partWait
        repeat {
            try await Task.sleep(for: min(.seconds(1), partWait))
            guard PartLock.isHeldByAnotherProcess(at: part) else { return }
            if isStopping.withLock({ $0 }) {
                totals.withLock { $0.canceled += 1 }
                throw JobRelease("the worker stops")
            }
        } while ContinuousClock.now < deadline
        throw givenBackForALease(id, item)
    }

    /// Says that a download goes back to the queue for `--lease` because another process writes its
    /// `.part` (an `again` line), and returns the release to throw.
    private func givenBackForALease(_ id: Int64, _ item: DownloadItem) -> JobRelease {
        let reason =
            "\(item.file).part is still being written by another download of this file; given back to the queue, "
            + "to be tried again in \(Self.secondsText(partWait))"
        reporter.failed(id, item, DownloadFailure(message: reason, httpStatus: nil, isFinal: false))
        return JobRelease(reason, after: partWait)
    }

    /// `1 s`, `30 s`, `0.75 s`: a wait, as the worker's messages give it.
    static func secondsText(_ duration: Duration) -> String {
        String(format: "%g s", duration.seconds)
    }

    /// The `again` line of a download stopped because the worker could not renew its lease in time.
    static let leaseLostMessage =
        "stopped: this worker could not renew its lease on the job in time (the store did not answer, or was "
        + "busy, for the --lease seconds); queued again, and the next attempt resumes the .part"

    /// Called (on any thread, any number of times) when a download failed because of this worker's
    /// disk or folder; the worker then stops.
    let onLocalFault = Locked<(@Sendable (String) -> Void)?>(nil)

    /// Whether a download's failure is this worker's: its disk is full, read-only or failing, or its
    /// folder can no longer be written. A 404, a checksum mismatch or a `dir=` folder of the job's that
    /// cannot be written is the download's, and fails it for good (another worker would meet it too, and
    /// stopping every worker for one job would stop the whole queue).
    func isLocalFault(_ error: DownloadError) -> Bool {
        guard error.kind == .fileSystem, let code = error.osErrno else { return false }
        if [ENOSPC, EDQUOT, EROFS, EIO].contains(code) { return true }
        // Whatever the error, when the worker's -d itself cannot be used any more (made read-only,
        // deleted, replaced by a file).
        return access(directory.path, W_OK | X_OK) != 0
    }

    /// Seconds since the worker started.
    var elapsed: Double { Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9 }

    /// Reports a job that no worker can run as a failure of this worker (its line says `discarded`), and
    /// returns the error that ends it as discarded, with `reason`.
    private func discard(_ job: ClaimedJob, _ reason: String, _ download: StoredDownload?) -> Error {
        totals.withLock { $0.failed += 1 }
        let item = Self.discardedItem(job.id, download, file: download.map { display($0.relativePath) })
        reporter.failed(job.id.rawValue, item, DownloadFailure(message: "discarded: \(reason)", httpStatus: nil))
        return JobHandlerError.discard(reason)
    }

    /// How a discarded job is named in output: its file and URL when its parameters decode, else its
    /// identifier.
    static func discardedItem(_ id: JobID, _ download: StoredDownload?, file: String?) -> DownloadItem {
        guard let download, let file else { return DownloadItem(url: "", file: "job \(id)", name: "job \(id)") }
        let shown = PrintableText.escaped(file)
        return DownloadItem(url: download.redactedURL, file: shown, name: download.path.last.map(PrintableText.escaped) ?? shown)
    }

    /// What is wrong with parameters that do not decode, in a few words (`DecodingError`'s own
    /// description is a page of Swift).
    static func shortDescription(of error: any Error) -> String {
        guard let error = error as? DecodingError else { return PrintableText.escaped("\(error)") }
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let at = path(context)
            return "no \(key.stringValue)" + (at.isEmpty ? "" : " in \(at)")
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            let at = path(context)
            return at.isEmpty ? "not the JSON object this version expects" : "\(at) is not what this version expects"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not JSON" : "\(path(context)) is not what this version expects"
        @unknown default:
            return "not what this version expects"
        }
    }

    private func display(_ relative: String) -> String {
        let base = directoryText
        if base == "." || base.isEmpty { return relative }
        return base.hasSuffix("/") ? base + relative : base + "/" + relative
    }
}
