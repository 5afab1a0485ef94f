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
/// The calling thread reads the list and starts downloads; it blocks while `-j` are in flight, so
/// memory follows the downloads in flight, never the list. Everything else (job events, ticks, signals,
/// output) happens on one serial queue, ``queue``, which owns the mutable state below.
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
    private let window: DispatchSemaphore
    private let inFlight = DispatchGroup()
    private let started = DispatchTime.now()

    /// The signal that stopped the run; read by the feeding thread, written on ``queue``.
    private let interruption = Locked<Int32?>(nil)

    // State owned by `queue`.
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
        self.window = DispatchSemaphore(value: settings.jobs)
        totals.listed = listed
    }

    /// Runs every entry; returns the exit status (0, 1, 130 or 143).
    func run(_ entries: inout InputList.Entries) -> Int32 {
        installSignalHandlers()
        startTicker()
        var names = OutputNames()
        let directoryPath = settings.directory.path
        while let entry = entries.next() {
            window.wait()
            if interruption.withLock({ $0 }) != nil {
                window.signal()
                break
            }
            let name = names.claim(directory: entry.dir, name: entry.out ?? FileNaming.name(for: entry.url))
            let relative = (entry.dir + [name]).joined(separator: "/")
            let item = DownloadItem(url: entry.url.redactedString, file: display(relative), name: name)
            // A path string, one URL: `appendingPathComponent` and `.path` cost ~12,000 instructions each.
            let path = ([directoryPath] + entry.dir + [name]).joined(separator: "/")
            var info = stat()
            if !settings.options.overwrite && stat(path, &info) == 0 {
                queue.sync {
                    totals.skipped += 1
                    reporter.skipped(item)
                }
                window.signal()
                continue
            }
            start(item: item, url: entry.url, file: URL(fileURLWithPath: path, isDirectory: false), checksum: entry.checksum)
        }
        if let failure = entries.failure {
            queue.sync { Console.standard.writeErr("yxdownload: \(failure)\n") }
        }
        inFlight.wait()
        return queue.sync { finish() }
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
        inFlight.enter()
        // Asynchronously: this thread would otherwise wait for `queue` once per file. The record is in
        // place before the job's first event, because `queue` runs this block before anything the job
        // queues on it later.
        let observation = job.observe { [unowned self] _, event in handle(id, event) }
        let created = DispatchTime.now()
        queue.async { [self] in
            active[id] = Active(item: item, job: job, observation: observation, created: created)
        }
        guard job.start(on: dispatcher) else {
            queue.sync {
                totals.canceled += 1
                end(id)
            }
            return
        }
        // A signal that arrived between the check above and the start: this job missed cancelAll().
        if interruption.withLock({ $0 }) != nil { job.cancel() }
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
    }

    private func end(_ id: ObjectIdentifier) {
        active[id]?.observation.invalidate()
        active[id] = nil
        if let index = order.firstIndex(of: id) { order.remove(at: index) }
        window.signal()
        inFlight.leave()
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
        let signal = interruption.withLock { $0 }
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
        let first = interruption.withLock { current -> Bool in
            guard current == nil else { return false }
            current = number
            return true
        }
        guard first else {
            Console.standard.writeOut(Console.standard.isTerminal ? "\u{1B}[?25h" : "")
            Console.standard.writeErr("yxdownload: \(Self.signalName(number)) again, exiting now\n")
            exit(128 + number)
        }
        dispatcher.cancelAll()
    }

    static func signalName(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        default: "signal \(number)"
        }
    }
}
