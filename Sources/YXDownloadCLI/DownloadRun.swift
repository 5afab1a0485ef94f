import Dispatch
import Foundation
import YXDownload
import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One run of `yxdownload` over a checked list: feeds a window of `-j` downloads to a dispatcher,
/// reports their events, handles SIGINT and SIGTERM, and returns the exit status.
///
/// Everything happens on one serial queue, ``queue``, which owns the mutable state below: reading the
/// list, starting downloads (never more than `-j` at a time, so memory follows the downloads in flight,
/// never the list), job events, ticks, signals and output. The next download starts in the same turn
/// that handled the end of the previous one. The calling thread only waits for the end.
final class DownloadRun: @unchecked Sendable {
    struct Settings {
        var jobs: Int
        /// The output directory as the user gave it (for display) and as a URL.
        var directoryText: String
        var directory: URL
        var options: DownloadOptions
    }

    private let settings: Settings
    private let reporter: any RunReporter
    private let engine: TransferEngine
    private let dispatcher = Dispatcher(name: "yxdownload")
    /// Owns everything below, the reporter, and the output.
    private let queue = DispatchQueue(label: "yxdownload.run")
    /// Signaled once, when the list is done and no download runs.
    private let done = DispatchSemaphore(value: 0)
    private let started = DispatchTime.now()

    /// Entries handled per turn of ``queue`` while feeding, so that ticks and signals get their turn
    /// during a long stretch of files that are skipped.
    private static let feedBatch = 256

    // State owned by `queue`.
    /// The signal that stopped the run.
    private var interruption: Int32?
    private var entries: InputList.Entries?
    private var names = OutputNames()
    private lazy var directoryPath = settings.directory.path
    /// Downloads started and not ended.
    private var running = 0
    private var listDone = false
    private var signaledDone = false
    private var totals = RunTotals()
    private var active: [ObjectIdentifier: Active] = [:]
    /// Running downloads in start order, for stable bar order.
    private var order: [ObjectIdentifier] = []
    private var ticker: (any DispatchSourceTimer)?
    private var signalSources: [any DispatchSourceSignal] = []

    private struct Active {
        var item: DownloadItem
        var job: DownloadJob
        var observation: JobObservation
        var created: DispatchTime
        var hasStarted = false
    }

    init(settings: Settings, reporter: any RunReporter, engine: TransferEngine, listed: Int) {
        self.settings = settings
        self.reporter = reporter
        self.engine = engine
        totals.listed = listed
    }

    /// Runs every entry; returns the exit status (0, 1, 130 or 143).
    func run(_ entries: InputList.Entries) -> Int32 {
        queue.sync {
            installSignalHandlers()
            startTicker()
            self.entries = entries
        }
        queue.async { [self] in feed() }
        done.wait()
        return queue.sync { finish() }
    }

    /// Starts downloads until `-j` run or the list ends (at most ``feedBatch`` entries per turn), and
    /// signals ``done`` once nothing is left. On `queue`; called again whenever a download ends.
    private func feed() {
        dispatchPrecondition(condition: .onQueue(queue))
        var budget = Self.feedBatch
        while running < settings.jobs && !listDone {
            if interruption != nil {
                listDone = true
                break
            }
            if budget == 0 {
                queue.async { [self] in feed() }
                return
            }
            budget -= 1
            guard let entry = entries?.next() else {
                listDone = true
                if let failure = entries?.failure { Console.standard.writeErr("yxdownload: \(failure)\n") }
                entries = nil
                break
            }
            let name = names.claim(directory: entry.dir, name: entry.out ?? FileNaming.name(for: entry.url))
            let relative = (entry.dir + [name]).joined(separator: "/")
            let item = DownloadItem(url: entry.url.redactedString, file: display(relative), name: name)
            // A path string, one URL: `appendingPathComponent` and `.path` cost ~12,000 instructions each.
            let path = ([directoryPath] + entry.dir + [name]).joined(separator: "/")
            var info = stat()
            if !settings.options.overwrite && stat(path, &info) == 0 {
                totals.skipped += 1
                reporter.skipped(item)
                continue
            }
            start(item: item, url: entry.url, file: URL(fileURLWithPath: path, isDirectory: false), checksum: entry.checksum)
        }
        if listDone && running == 0 && !signaledDone {
            signaledDone = true
            done.signal()
        }
    }

    private func display(_ relative: String) -> String {
        let base = settings.directoryText
        if base == "." || base.isEmpty { return relative }
        return base.hasSuffix("/") ? base + relative : base + "/" + relative
    }

    private func start(item: DownloadItem, url: URL, file: URL, checksum: Checksum?) {
        let job = DownloadJob(
            url: url, to: file, checksum: checksum, options: settings.options, engine: engine, callbackQueue: queue)
        let id = ObjectIdentifier(job)
        let observation = job.observe { [unowned self] _, event in handle(id, event) }
        active[id] = Active(item: item, job: job, observation: observation, created: .now())
        running += 1
        if !job.start(on: dispatcher) {
            totals.canceled += 1
            end(id)
        }
    }

    // MARK: - Events (on `queue`)

    private func handle(_ id: ObjectIdentifier, _ event: JobEvent) {
        guard var record = active[id] else { return }
        switch event {
        case .started:
            record.hasStarted = true
            active[id] = record
            order.append(id)
            reporter.started(record.item)
            return
        case .progress:
            return
        case .finished(let value):
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - record.created.uptimeNanoseconds) / 1e9
            if let result = value as? DownloadResult, result.outcome != .skippedExisting {
                totals.done += 1
                totals.bytes += result.bytesReceived
                reporter.finished(record.item, result: result, seconds: seconds)
            } else {
                totals.skipped += 1
                reporter.skipped(record.item)
            }
            end(id)
        case .failed(let error):
            totals.failed += 1
            totals.bytes += record.job.progressSnapshot.bytesReceived
            reporter.failed(record.item, error: error)
            end(id)
        case .canceled:
            totals.canceled += 1
            totals.bytes += record.job.progressSnapshot.bytesReceived
            end(id)
        }
        feed()  // the slot it freed
    }

    /// A download is over: forget it (``feed()`` starts the next one).
    private func end(_ id: ObjectIdentifier) {
        active[id]?.observation.invalidate()
        active[id] = nil
        if let index = order.firstIndex(of: id) { order.remove(at: index) }
        running -= 1
    }

    private func startTicker() {
        guard let interval = reporter.tickInterval else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(20))
        timer.setEventHandler { [unowned self] in tick() }
        timer.resume()
        ticker = timer
    }

    private func tick() {
        totals.seconds = elapsed()
        let running = order.compactMap { active[$0] }.map {
            ActiveDownload(item: $0.item, progress: $0.job.progressSnapshot)
        }
        reporter.tick(active: running, totals: totals)
    }

    private func elapsed() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
    }

    private func finish() -> Int32 {
        ticker?.cancel()
        ticker = nil
        totals.seconds = elapsed()
        let signal = interruption
        reporter.end(totals: totals, interruptedBy: signal.map(Self.signalName))
        if let signal { return 128 + signal }
        return totals.failed > 0 ? 1 : 0
    }

    // MARK: - Signals

    private func installSignalHandlers() {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [unowned self] in interrupt(number) }
            source.resume()
            signalSources.append(source)
        }
    }

    /// The first signal cancels every download (their `.part` files stay); a second one exits at once.
    private func interrupt(_ number: Int32) {
        guard interruption == nil else {
            Console.standard.writeOut(Console.standard.isTerminal ? "\u{1B}[?25h" : "")
            Console.standard.writeErr("yxdownload: \(Self.signalName(number)) again, exiting now\n")
            exit(128 + number)
        }
        interruption = number
        dispatcher.cancelAll()
        feed()  // no new download; and if none runs, the run is over
    }

    static func signalName(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        default: "signal \(number)"
        }
    }
}
