import Foundation
import ServiceLifecycle
import YXDownload
import YXDownloadCLI
import YXJobStore
import YXJobStoreSQLite
@_spi(YXQueueInternals) import YXQueue
import YXTerminal

/// A worker's settings, and its run.
struct WorkerSettings: Sendable {
    var location: QueueLocation
    var directory: URL
    var directoryText: String
    var jobs: Int
    /// How many more downloads may wait for the disk, each having given its place to the next claim.
    var saving: Int
    var connections: Int
    var maxSpeed: Int?
    var exitWhenEmpty: Bool
    var recoveryBound: Duration
    var grace: Duration
    var json: Bool
    var quiet: Bool
    var verbose: Int

    /// Opens the store, runs the worker until it stops, prints the summary; returns the exit status.
    func run(console: Console) async -> Int32 {
        // A worker runs for long and will most likely meet HTTPS: OpenSSL's first-use work (about 5 ms,
        // see `LibcurlSetUp`) runs on another core while the store opens, not at the first connection.
        LibcurlSetUp.warmUpTLSInBackground()
        // On a terminal (without --json or -q): bars for the running downloads, as a download draws them.
        let screen = !json && !quiet && console.isTerminal ? TerminalScreen(console: console) : nil
        let logger = DiagnosticLog.logger(verbosity: verbose) { line in
            if let screen { screen.print([line], toStandardError: true) } else { console.writeErr(line + "\n") }
        }
        // A mistyped path makes a new, empty queue that nothing will fill: say so, even with -q.
        let isNew = !location.isPostgres && !FileManager.default.fileExists(atPath: location.text)
        guard let store = await location.open(logger: logger, console: console) else { return ExitStatus.failure }
        // SQLite opens a file it cannot write for reading only, and the connection stays so: a worker would
        // fail every claim however long it tried (found by a helper's review). It does not start.
        if let sqlite = store as? SQLiteJobStore, (try? await sqlite.isReadOnly()) == true {
            console.writeErr(
                "yxdownload: cannot write the queue \(location): it could be opened for reading only (check the "
                    + "permissions of the file and of its folder); a worker must write it\n")
            try? await store.close()
            return ExitStatus.usage
        }
        if isNew {
            let note = "yxdownload: \(location) held no queue: a new, empty one was made there (is the path right?)"
            if let screen { screen.print([note], toStandardError: true) } else { console.writeErr(note + "\n") }
        }
        var options = DownloadOptions()
        options.connections = connections
        options.computeSHA256 = json  // a finish event carries the file's SHA-256, as a download's does
        let transfers = jobs * connections
        let dispatcher = Dispatcher(name: "yxdownload-worker", queues: DownloadQueue.limits(transfers: transfers))
        var configuration = Downloader.Configuration(
            name: "yxdownload", maxConcurrentTransfers: transfers, maxBytesPerSecond: maxSpeed, defaultOptions: options)
        configuration.logsConnectionDetails = verbose >= 2
        let downloader = Downloader(configuration: configuration, dispatcher: dispatcher, logger: logger)
        let output: any RunReporter =
            if json { JSONReporter(console: console) }
            else if let screen { TerminalReporter(screen: screen, console: console) }
            else { PlainReporter(console: console, quiet: quiet) }
        let reporter = SharedReporter(output)
        let runner = DownloadJobRunner(
            downloader: downloader, directory: directory, directoryText: directoryText, options: options, reporter: reporter,
            partWait: recoveryBound)

        var workerConfiguration = JobWorker.Configuration()
        workerConfiguration.maximumConcurrentJobs = jobs
        // `-j` counts the downloads that transfer, as in a plain run: one whose bytes are in and that waits
        // for the flush to disk releases its place (`onSaving`), and the worker claims the next meanwhile.
        workerConfiguration.maximumReleasedJobs = saving
        workerConfiguration.claimBatchSize = jobs
        workerConfiguration.recoveryBound = recoveryBound
        workerConfiguration.shutdownGracePeriod = grace
        workerConfiguration.progressInterval = .milliseconds(500)
        workerConfiguration.exitWhenIdle = exitWhenEmpty
        // A worker run as a service keeps trying a store that refuses it (it may come back): it says so
        // once, even with -q, and once more when the store answers again.
        workerConfiguration.claimTrouble = { [location] error in
            let line = error.map { "yxdownload: \(location) refuses this worker's claims (\(StoreErrorText.short($0))); still trying" }
                ?? "yxdownload: \(location) takes claims again"
            if let screen { screen.print([line], toStandardError: true) } else { console.writeErr(line + "\n") }
        }
        let worker = JobWorker(store: store, runner: runner, configuration: workerConfiguration, logger: logger)
        if !quiet && !json {
            let banner = "yxdownload: worker \(worker.id) on \(location), \(jobs) at a time into \(directoryText)"
            if let screen { screen.print([banner], toStandardError: true) } else { console.writeErr(banner + "\n") }
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: worker, successTerminationBehavior: .gracefullyShutdownGroup)
                ],
                // None: `InterruptSignals` routes them (below) and triggers the graceful shutdown; given
                // here too, the group would take SIGINT over even when the worker was started with it
                // ignored (found by a review).
                gracefulShutdownSignals: [],
                logger: logger
            )
        )
        // --json: progress events once a second, for the downloads whose bytes moved; on a terminal, the
        // bars ten times a second.
        let ticker = reporter.tickInterval.map { interval in
            Task {
                while (try? await Task.sleep(for: .milliseconds(Int64(interval * 1000)))) != nil {
                    var totals = runner.totals.withLock { $0 }
                    totals.seconds = runner.elapsed
                    reporter.tick(totals: totals)
                }
            }
        }
        // A download that failed on this worker's disk or folder was given back; the worker stops, so as
        // not to take every job of the queue and give it back.
        let localFault = Locked<String?>(nil)
        runner.onLocalFault.withLock {
            $0 = { message in
                let first = localFault.withLock { fault -> Bool in
                    defer { fault = fault ?? message }
                    return fault == nil
                }
                if first { Task { await group.triggerGracefulShutdown() } }
            }
        }
        // A signal starts the group's graceful shutdown here too (it may come before the group listens
        // for it); a second one ends the grace period at once: running downloads are given back now.
        // With --exit-when-empty, a worker stopped by a signal before the queue was empty exits as an
        // interrupted download does (130, 143), so that `worker --exit-when-empty && next-step` stops.
        // Once the group has ended, the worker is only closing the store, and a signal changes nothing.
        let stoppedBy = Locked<Int32?>(nil)
        let groupEnded = Locked(false)
        InterruptSignals.route { number in
            guard !groupEnded.withLock({ $0 }) else { return }
            let isFirst = stoppedBy.withLock { signal -> Bool in
                defer { signal = signal ?? number }
                return signal == nil
            }
            if isFirst {
                runner.isStopping.withLock { $0 = true }
                Task { await group.triggerGracefulShutdown() }
            } else if InterruptSignals.escalates(number) {
                worker.shutdown(gracePeriod: .zero)
            }
        }
        var status = ExitStatus.success
        do {
            try await group.run()
        } catch {
            console.writeErr("yxdownload: the worker stopped: \(StoreErrorText.short(error))\n")
            status = ExitStatus.failure
        }
        groupEnded.withLock { $0 = true }
        ticker?.cancel()
        downloader.shutdown()
        // Stopped by a signal: an interruption if downloads were stopped or the queue still holds some.
        var interrupted = false
        if exitWhenEmpty, stoppedBy.withLock({ $0 }) != nil {
            let live = try? await store.jobs(
                JobQuery(states: Set(StoredJobState.live), names: [StoredDownload.jobName], limit: 1))
            interrupted = runner.totals.withLock({ $0.canceled > 0 }) || live?.isEmpty != true
        }
        try? await store.close()
        var totals = runner.totals.withLock { $0 }
        totals.seconds = runner.elapsed
        reporter.end(totals: totals)
        if totals.failed > 0 { status = ExitStatus.failure }
        if let fault = localFault.withLock({ $0 }) {
            console.writeErr(
                "yxdownload: the worker stopped: \(fault). Its downloads went back to the queue for another worker; "
                    + "fix this, then start it again.\n")
            status = ExitStatus.failure
        }
        if interrupted, let signal = stoppedBy.withLock({ $0 }) { status = 128 + signal }
        return status
    }
}
