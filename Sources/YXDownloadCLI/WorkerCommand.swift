import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import YXDownload
import YXJobStore
import YXQueue
import YXTerminal

/// `yxdownload worker --queue STORE -d DIR [-j N] [-x N] …`: claims the downloads that
/// `yxdownload enqueue` stored and runs them into `DIR`, until stopped (or, with `--exit-when-empty`,
/// until no download is left in the store). Any number of workers may share a store; those that share
/// `DIR` (one machine, or a shared folder) resume each other's `.part` files.
///
/// The worker is a ``JobWorker`` in a swift-service-lifecycle `ServiceGroup`: SIGTERM or SIGINT stops
/// it gracefully (no new claims, running downloads get `--grace` seconds to finish, the rest are
/// canceled, keep their `.part` and go back to the store for another worker).
struct WorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Run the downloads of a queue until stopped.",
        usage: "yxdownload worker --queue <store> [-d <dir>] [-j <n>] [-x <n>] [--exit-when-empty] [<options>]",
        discussion: """
            Claims downloads stored by 'yxdownload enqueue' and downloads them into --dir, -j at a \
            time, renewing each one's lease while it runs. Start as many workers as you like, on one \
            machine (an SQLite store) or many (a postgres:// store); workers that share --dir resume \
            each other's .part files.

            A worker that dies (kill -9, a crash, a lost machine) leaves its downloads leased: another \
            worker claims them again within --lease seconds and resumes their .part files. SIGTERM or \
            Ctrl-C stops a worker gracefully: no new claims, running downloads get --grace seconds to \
            finish, the others are canceled (their .part kept) and given back to the queue.

            A 404 or a checksum mismatch fails a download for good ('yxdownload status' shows it); a \
            transient error that outlasts --retries (a server down for a while) queues it again for a \
            later attempt, after a back-off (1 s doubling, up to 10 times).

            Output: one line per finished, skipped or failed download, a summary on standard error; on a \
            terminal, a bar per running download below them; with --json, one JSON object per event on \
            standard output instead (as 'yxdownload --json' prints).

            Exit status: 0 stopped (or, with --exit-when-empty, the queue is empty) and no download of \
            this worker failed; 1 some failed; 2 bad usage.
            """
    )

    @Option(
        name: .customLong("queue"),
        help: ArgumentHelp("The job store: an SQLite file path or a postgres:// URL.", valueName: "STORE"),
        completion: .file())
    var queue: String

    @Option(
        name: [.short, .customLong("dir")], help: ArgumentHelp("Output directory, created if missing.", valueName: "DIR"),
        completion: .directory)
    var dir = "."

    @Option(name: [.short, .customLong("jobs")], help: ArgumentHelp("Downloads at the same time.", valueName: "N"))
    var jobs = 5

    @Option(
        name: [.customShort("x"), .customLong("connections")],
        help: ArgumentHelp("Connections per file, where the server accepts ranges (1-16).", valueName: "N"))
    var connections = 1

    @Option(
        name: .customLong("max-speed"),
        help: ArgumentHelp("Overall speed limit in bytes per second: 500K, 2M, 1.5G (binary units).", valueName: "RATE"))
    var maxSpeed: ByteRate?

    @Flag(name: .customLong("exit-when-empty"), help: "Exit once no download is queued or running in the store.")
    var exitWhenEmpty = false

    @Option(
        help: ArgumentHelp(
            "How long a dead worker's downloads stay unclaimable, at most (its lease is 80 % of this).",
            valueName: "SECONDS"))
    var lease: Double = 30

    @Option(
        help: ArgumentHelp("On SIGTERM or Ctrl-C, how long running downloads may go on before they are given back.", valueName: "SECONDS"))
    var grace: Double = 10

    @Flag(
        help: "Print one JSON object per event on standard output (start, progress, finish, skip, fail, summary), as a download does.")
    var json = false

    @Flag(name: [.short, .customLong("quiet")], help: "Print only errors and the final summary.")
    var quiet = false

    @Flag(name: [.short, .customLong("verbose")], help: "Log requests, retries and the worker's claims on standard error; -vv adds more.")
    var verbose: Int

    func validate() throws {
        do {
            try QueueLocation(text: queue).validate()
        } catch {
            throw ValidationError(error.description)
        }
        guard (1...1000).contains(jobs) else { throw ValidationError("--jobs must be between 1 and 1000 (got \(jobs)).") }
        guard (1...16).contains(connections) else {
            throw ValidationError("--connections must be between 1 and 16 (got \(connections)).")
        }
        guard !dir.isEmpty else { throw ValidationError("--dir must not be empty.") }
        guard lease.isFinite, (0.5...86_400).contains(lease) else {
            throw ValidationError("--lease must be between 0.5 and 86400 seconds.")
        }
        guard grace.isFinite, (0...86_400).contains(grace) else {
            throw ValidationError("--grace must be between 0 and 86400 seconds.")
        }
    }

    /// Runs the command; returns the exit status.
    func execute(console: Console = .standard) -> Int32 {
        let directory = URL(fileURLWithPath: dir, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            console.writeErr("yxdownload: cannot create the output directory \(dir): \(error.localizedDescription)\n")
            return ExitStatus.usage
        }
        let budget = DescriptorBudget.current
        let fitting = budget.jobs(jobs, connections: connections)
        if fitting < jobs, let limit = budget.limit {
            console.writeErr(
                "yxdownload: the limit of \(limit) open files (ulimit -n) leaves room for \(fitting) download"
                    + "\(fitting == 1 ? "" : "s") at once with -x \(connections); running \(fitting) instead of \(jobs)\n")
        }
        let settings = WorkerSettings(
            location: QueueLocation(text: queue), directory: directory, directoryText: dir, jobs: fitting,
            connections: connections, maxSpeed: maxSpeed?.bytesPerSecond, exitWhenEmpty: exitWhenEmpty,
            recoveryBound: .milliseconds(Int64(lease * 1000)), grace: .milliseconds(Int64(grace * 1000)), json: json,
            quiet: quiet, verbose: verbose)
        return BlockingRun.run { await settings.run(console: console) }
    }
}

/// A worker's settings, and its run.
struct WorkerSettings: Sendable {
    var location: QueueLocation
    var directory: URL
    var directoryText: String
    var jobs: Int
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
        // On a terminal (without --json or -q): bars for the running downloads, as a download draws them.
        let screen = !json && !quiet && console.isTerminal ? TerminalScreen(console: console) : nil
        let logger = DiagnosticLog.logger(verbosity: verbose) { line in
            if let screen { screen.print([line], toStandardError: true) } else { console.writeErr(line + "\n") }
        }
        let store: any JobStore
        do {
            store = try await location.open(logger: logger)
        } catch {
            console.writeErr("yxdownload: cannot open the queue \(location): \(error)\n")
            return ExitStatus.failure
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
            downloader: downloader, directory: directory, directoryText: directoryText, options: options, reporter: reporter)

        var workerConfiguration = JobWorker.Configuration()
        workerConfiguration.maximumConcurrentJobs = jobs
        workerConfiguration.claimBatchSize = jobs
        workerConfiguration.recoveryBound = recoveryBound
        workerConfiguration.shutdownGracePeriod = grace
        workerConfiguration.progressInterval = .milliseconds(500)
        workerConfiguration.exitWhenIdle = exitWhenEmpty
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
                gracefulShutdownSignals: [.sigterm, .sigint],
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
        var status = ExitStatus.success
        do {
            try await group.run()
        } catch {
            console.writeErr("yxdownload: the worker stopped: \(error)\n")
            status = ExitStatus.failure
        }
        ticker?.cancel()
        downloader.shutdown()
        try? await store.close()
        var totals = runner.totals.withLock { $0 }
        totals.seconds = runner.elapsed
        reporter.end(totals: totals)
        if totals.failed > 0 { status = ExitStatus.failure }
        return status
    }
}
