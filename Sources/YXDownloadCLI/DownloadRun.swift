import Dispatch
import Foundation
import YXDownload
@_spi(YXQueueInternals) import YXQueue
import YXTerminal

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One run of `yxdownload` over checked entries: submits a download per entry to the downloader's
/// dispatcher, reports their events, handles SIGINT and SIGTERM, and returns the exit status.
///
/// Two parts:
/// - A producer task reads the entries one at a time, names each file (``OutputNames``), skips files
///   that exist, and submits the others with `Dispatcher.submit`, which waits while the dispatcher's
///   `maxPendingJobs` jobs (``Settings/window``) are under way: memory follows the downloads in flight,
///   never the length of the list. Submitted downloads wait in the transfer queue, so when a download
///   ends, the next one starts on the thread that ended it, without a hand-off.
/// - The run's serial queue (``events``) receives every job's events (one dispatcher-wide observer),
///   ticks and signals, and owns the counters, the running downloads and the reporter.
///
/// The producer runs on ``events`` too (its task's executor, ``QueueExecutor``): a download's end is
/// delivered there, and the dispatcher lets the waiting producer go on from there. ``events`` is a
/// `DirectQueue`: the downloads that a transfer lane ends in one turn are delivered by the lane itself
/// when the queue is idle, and the producer refills the window there, so a small file costs no thread
/// wake-up at all (through a dispatch queue, the lane woke the run's thread about once per turn; on the
/// cooperative pool the producer cost about five futex calls per file).
///
/// The calling thread only waits for the end.
final class DownloadRun: @unchecked Sendable {
    struct Settings {
        /// Downloads submitted at once: `-j` or more (see ``DownloadCommand/window(jobs:connections:)``);
        /// the dispatcher's `maxPendingJobs`.
        var window: Int
        /// The output directory as the user gave it (for display) and as a URL.
        var directoryText: String
        var directory: URL
        var options: DownloadOptions
    }

    private let settings: Settings
    private let reporter: any RunReporter
    /// Runs the downloads; its dispatcher bounds the submitted jobs (``Settings/window``).
    private let downloader: Downloader
    /// Owns the state below, the reporter, and the output. Everything is handed to it through
    /// `events.run` or `events.async` (never `queue.async`), so that a lane that delivers events never
    /// waits for it.
    ///
    /// One for the process, never released: a dispatch queue that ends hands its context's release to a
    /// global queue, which starts a pool thread for it as the process exits (and a pool thread started
    /// then costs the last milliseconds of a short run). A process runs one `DownloadRun`.
    private let events = DownloadRun.processEvents
    private static let processEvents = DirectQueue(label: "yxdownload.run")
    private var queue: DispatchQueue { events.queue }
    /// Signaled once, when every entry was handled and no download is left.
    private let done = DispatchSemaphore(value: 0)
    private let started = DispatchTime.now()
    /// Downloads submitted and not ended: added by the producer before it submits one, removed on
    /// ``events`` at its end.
    private let submitted = Locked<[ObjectIdentifier: Submitted]>([:])

    /// Skipped entries reported in one turn of ``queue``.
    private static let skipBatch = 256

    private struct Submitted {
        var item: DownloadItem
        var job: DownloadJob
    }

    private struct Running {
        var id: ObjectIdentifier
        var item: DownloadItem
        var job: DownloadJob
        /// When its first step began (uptime nanoseconds).
        var startedAt: UInt64
    }

    // State owned by `events`.
    /// The signal that stopped the run.
    private var interruption: Int32?
    private var producer: Task<Void, Never>?
    private var producerDone = false
    /// The list could not be read to its end (the second pass failed). Touched on `events`.
    /// Why the list ended before its last entry, when it changed after it was checked.
    private var listChange: String?
    private var signaledDone = false
    private var totals = RunTotals()
    /// Downloads that started (their first step runs), in start order, for stable bars.
    private var running: [Running] = []
    private var observation: JobObservation?
    private var ticker: (any DispatchSourceTimer)?

    init(settings: Settings, reporter: any RunReporter, downloader: Downloader, listed: Int) {
        self.settings = settings
        self.reporter = reporter
        self.downloader = downloader
        totals.listed = listed
    }

    /// Runs every entry; returns the exit status (0, 1, 130 or 143).
    func run(_ entries: RunEntries) -> Int32 {
        onEvents { [self] in
            installSignalHandlers()
            startTicker()
            // Not progress: bars read each job's figures on ticks, so no event wakes the queue mid-transfer.
            observation = downloader.dispatcher.observe([.started, .terminal]) { [unowned self] job, event in
                handle(job, event)
            }
            producer = Task.detached(executorPreference: QueueExecutor(events)) { [self] in await produce(entries) }
        }
        done.wait()
        let status = Locked<Int32>(0)
        onEvents { [self] in
            let code = finish()
            status.withLock { $0 = code }
        }
        return status.withLock { $0 }
    }

    /// Runs `body` on ``events`` and waits for it, from the calling thread (which is not on it).
    private func onEvents(_ body: @escaping @Sendable () -> Void) {
        let finished = DispatchSemaphore(value: 0)
        events.run {
            body()
            finished.signal()
        }
        finished.wait()
    }

    // MARK: - The producer

    /// Reports `item` as failed with `message`, without a download (its folder cannot be used), after
    /// the skips listed before it.
    private func refuse(_ item: DownloadItem, _ message: String, after skipped: inout [DownloadItem]) async {
        if !skipped.isEmpty { await reportSkipped(&skipped) }
        events.async { [self] in
            totals.failed += 1
            reporter.failed(item, DownloadFailure(message: message, httpStatus: nil))
        }
    }

    /// Names, skips or submits every entry, in order, then tells ``events`` that it is done.
    private func produce(_ entries: RunEntries) async {
        var entries = entries
        var names = OutputNames()
        var existing = ExistingFiles(base: settings.directory.path)
        var skipped: [DownloadItem] = []
        while !Task.isCancelled, let entry = entries.next() {
            // An entry whose folder is another download's file claims no name: it is not downloaded.
            let folderIsAFile = names.claimFolders(entry.dir)
            let wanted = entry.out ?? FileNaming.name(for: entry.url)
            let name = folderIsAFile == nil ? names.claim(directory: entry.dir, name: wanted) : wanted
            // Most entries go to the output directory itself: no arrays to join.
            let relative = entry.dir.isEmpty ? name : (entry.dir + [name]).joined(separator: "/")
            let item = DownloadItem(url: URLRedaction.redacted(entry.url), file: display(relative), name: name)
            if let folderIsAFile {
                await refuse(item, OutputDirectory.folderIsAFileMessage(display(folderIsAFile)), after: &skipped)
                continue
            }
            // A path string, one URL: `appendingPathComponent` and `.path` cost ~12,000 instructions each.
            let path = existing.base + "/" + relative
            if !entry.dir.isEmpty, let link = existing.symbolicLink(in: entry.dir) {
                await refuse(item, OutputDirectory.linkedFolderMessage(display(link)), after: &skipped)
                continue
            }
            let fresh: Bool
            switch existing.presence(directory: entry.dir, name: name) {
            case .none:
                fresh = true
            case .file, .unknown:
                var info = stat()
                // A folder under the file's name is not the file: the download says what is in the way
                // (it was skipped as "exists", exit 0: found by a review).
                if !settings.options.overwrite && stat(path, &info) == 0 && (info.st_mode & S_IFMT) != S_IFDIR {
                    skipped.append(item)
                    if skipped.count >= Self.skipBatch { await reportSkipped(&skipped) }
                    continue
                }
                fresh = false
            case .partial:
                fresh = false
            }
            if !skipped.isEmpty { await reportSkipped(&skipped) }
            let job = DownloadJob(
                url: entry.url, toPath: path, checksum: entry.checksum,
                options: settings.options, engine: downloader.engine, callbackQueue: queue, destinationIsFresh: fresh)
            let id = ObjectIdentifier(job)
            submitted.withLock { $0[id] = Submitted(item: item, job: job) }
            let began: Bool
            do {
                began = try await downloader.dispatcher.submit(job)
            } catch {
                submitted.withLock { $0[id] = nil }  // interrupted while waiting for room: never started
                break
            }
            if !began {
                submitted.withLock { $0[id] = nil }
                events.async { [self] in totals.canceled += 1 }
            } else if Task.isCancelled {
                job.cancel()  // started just as the run was interrupted
            }
        }
        if !skipped.isEmpty { await reportSkipped(&skipped) }
        let failure = entries.failure
        events.async { [self] in
            listChange = failure  // not every entry was downloaded: the run failed, and its summary says why
            producerDone = true
            endIfDone()
        }
    }

    private func reportSkipped(_ items: inout [DownloadItem]) async {
        let batch = items
        items.removeAll(keepingCapacity: true)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            events.async { [self] in
                for item in batch {
                    totals.skipped += 1
                    reporter.skipped(item)
                }
                continuation.resume()
            }
        }
    }

    private func display(_ relative: String) -> String {
        let base = settings.directoryText
        if base == "." || base.isEmpty { return relative }
        return base.hasSuffix("/") ? base + relative : base + "/" + relative
    }

    // MARK: - Events (on `events`)

    private func handle(_ job: Job, _ event: JobEvent) {
        dispatchPrecondition(condition: .onQueue(queue))
        let id = ObjectIdentifier(job)
        switch event {
        case .started:
            guard let entry = submitted.withLock({ $0[id] }) else { return }
            running.append(Running(id: id, item: entry.item, job: entry.job, startedAt: DispatchTime.now().uptimeNanoseconds))
            reporter.started(entry.item)
            return
        case .progress, .retrying:
            return
        case .finished, .failed, .canceled:
            break
        }
        guard let entry = submitted.withLock({ $0.removeValue(forKey: id) }) else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        var startedAt: UInt64?
        if let index = running.firstIndex(where: { $0.id == id }) { startedAt = running.remove(at: index).startedAt }
        switch event {
        case .finished(let value):
            if let result = value as? DownloadResult, result.outcome != .skippedExisting {
                totals.done += 1
                totals.bytes += result.bytesReceived
                reporter.finished(entry.item, result: result, seconds: Double(now - (startedAt ?? now)) / 1e9)
            } else {
                totals.skipped += 1
                reporter.skipped(entry.item)
            }
        case .failed(let error):
            totals.failed += 1
            totals.bytes += entry.job.progressSnapshot.bytesReceived
            let failure = DownloadFailure(
                message: FailureMessage.text(for: error, file: entry.item.file, retries: settings.options.retryPolicy.retries),
                httpStatus: (error as? DownloadError)?.httpStatus)
            reporter.failed(entry.item, failure)
        default:
            // One that waited in the queue and never started counts as not started, as one never read.
            guard startedAt != nil else { break }
            totals.canceled += 1
            totals.bytes += entry.job.progressSnapshot.bytesReceived
        }
        endIfDone()
    }

    /// Signals ``done`` once every entry was handled and no download is left.
    private func endIfDone() {
        guard producerDone, !signaledDone, submitted.withLock({ $0.isEmpty }) else { return }
        signaledDone = true
        done.signal()
    }

    private func startTicker() {
        guard let interval = reporter.tickInterval else { return }
        // The source fires on a pool thread, which ticks there if no lane is delivering.
        let timer = DispatchSource.makeTimerSource()
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(20))
        timer.setEventHandler { [unowned self] in events.run { [unowned self] in tick() } }
        timer.resume()
        ticker = timer
    }

    private func tick() {
        totals.seconds = elapsed()
        reporter.tick(active: running.map { ActiveDownload(item: $0.item, progress: $0.job.progressSnapshot) }, totals: totals)
    }

    private func elapsed() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
    }

    private func finish() -> Int32 {
        ticker?.cancel()
        ticker = nil
        observation?.invalidate()
        observation = nil
        totals.seconds = elapsed()
        let signal = interruption
        let stop = signal.map { RunStop.signal(Self.signalName($0)) } ?? listChange.map(RunStop.listChanged)
        reporter.end(totals: totals, stoppedBy: stop)
        if let signal { return 128 + signal }
        return totals.failed > 0 || listChange != nil ? 1 : 0
    }

    // MARK: - Signals

    private func installSignalHandlers() {
        InterruptSignals.route { [weak self] number in
            guard let self else { return }
            events.run { self.interrupt(number) }
        }
    }

    /// The first signal stops the producer and cancels every download (their `.part` files stay); a
    /// second one exits at once, unless it is a SIGHUP (see ``InterruptSignals/escalates(_:)``).
    private func interrupt(_ number: Int32) {
        guard interruption == nil else {
            guard InterruptSignals.escalates(number) else { return }
            reporter.abandon()
            Console.standard.writeErr("yxdownload: \(Self.signalName(number)) again, exiting now\n")
            exit(128 + number)
        }
        interruption = number
        producer?.cancel()
        downloader.cancelAll()
    }

    static func signalName(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        default: "signal \(number)"
        }
    }
}

/// Runs a task's jobs on a `DirectQueue`: the run's producer task on the run's queue. A job resumed while
/// a lane delivers events there (the usual case: a download's end made room) runs on that lane, after
/// the events.
final class QueueExecutor: TaskExecutor, @unchecked Sendable {
    private let queue: DirectQueue

    init(_ queue: DirectQueue) {
        self.queue = queue
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // Never inline: a job is resumed wherever a continuation is, in the middle of other work.
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
