import ArgumentParser

/// `yxdownload worker --queue STORE -d DIR [-j N] [-x N] …`: claims the downloads that
/// `yxdownload enqueue` stored and runs them into `DIR`, until stopped (or, with `--exit-when-empty`,
/// until no download is left in the store). Any number of workers may share a store; those that share
/// `DIR` (one machine, or a shared folder) resume each other's `.part` files.
///
/// The worker is a `JobWorker` in a swift-service-lifecycle `ServiceGroup`: SIGTERM, SIGINT or SIGHUP
/// stops it gracefully (no new claims, running downloads get `--grace` seconds to finish, the rest are
/// canceled, keep their `.part` and go back to the store for another worker); a second SIGTERM or
/// SIGINT cancels them at once.
///
/// Only its options are defined here; `yxdownload-queue` runs it (``QueueCommands``).
package struct WorkerCommand: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Run the downloads of a queue until stopped.",
        usage: "yxdownload worker --queue <store> [-d <dir>] [-j <n>] [-x <n>] [--exit-when-empty] [<options>]",
        discussion: """
            Claims downloads stored by 'yxdownload enqueue' and downloads them into --dir, -j at a \
            time, renewing each one's lease while it runs. Start as many workers as you like, on one \
            machine (an SQLite store) or many (a postgres:// store); workers that share --dir resume \
            each other's .part files.

            A worker that dies (kill -9, a crash, a lost machine) leaves its downloads leased: another \
            worker claims them again within --lease seconds and resumes their .part files. SIGTERM, \
            SIGHUP (unless started with nohup) or Ctrl-C stops a worker gracefully: no new claims, running downloads get --grace seconds to \
            finish, the others are canceled (their .part kept) and given back to the queue. A second \
            SIGTERM or Ctrl-C does that at once (a second SIGHUP does not: a closed terminal often \
            sends two).

            A 404 or a checksum mismatch fails a download for good ('yxdownload status --failed' lists it); a \
            transient error that outlasts --retries (a server down for a while) queues it again for a \
            later attempt, after a back-off (1 s doubling, up to 10 times).

            Output: one line per finished, skipped or failed download, a summary on standard error; on a \
            terminal, a bar per running download below them; with --json, one JSON object per event on \
            standard output instead (as 'yxdownload --json' prints).

            Exit status: 0 stopped (or, with --exit-when-empty, the queue is empty) and no download of \
            this worker failed; 1 some failed (or, with --exit-when-empty, the store kept refusing its \
            claims); 2 bad usage, or a --dir or store it cannot write; with --exit-when-empty, 130, 143 \
            or 129 when SIGINT, SIGTERM or SIGHUP stopped it before the queue was empty.
            """
    )

    @Option(
        name: .customLong("queue"),
        help: ArgumentHelp("The job store: an SQLite file path or a postgres:// URL.", valueName: "STORE"),
        completion: .file())
    package var queue: String

    @Option(
        name: [.customShort("d", allowingJoined: true), .customLong("dir")], help: ArgumentHelp("Output directory, created if missing.", valueName: "DIR"),
        completion: .directory)
    package var dir = "."

    @Option(name: [.customShort("j", allowingJoined: true), .customLong("jobs")], parsing: .unconditional, help: ArgumentHelp("Downloads transferring at the same time.", valueName: "N"))
    package var jobs = 5

    @Option(
        name: [.customShort("x", allowingJoined: true), .customLong("connections")],
        parsing: .unconditional,
        help: ArgumentHelp("Connections per file, where the server accepts ranges (1-16).", valueName: "N"))
    package var connections = 1

    @Option(
        name: .customLong("max-speed"),
        parsing: .unconditional,
        help: ArgumentHelp("Overall speed limit in bytes per second: 500K, 2M, 1.5G (binary units).", valueName: "RATE"))
    package var maxSpeed: ByteRate?

    @Flag(name: .customLong("exit-when-empty"), help: "Exit once no download is queued or running in the store.")
    package var exitWhenEmpty = false

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "How long a dead worker's downloads stay unclaimable, at most (its lease is 80 % of this); also how long "
                + "a download waits for a .part another process writes before it goes back to the queue for as long.",
            valueName: "SECONDS"))
    package var lease: Double = 30

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "On SIGTERM, SIGHUP or Ctrl-C, how long running downloads may go on before they are given back (a second SIGTERM or Ctrl-C: at once).",
            valueName: "SECONDS"))
    package var grace: Double = 10

    @Flag(
        help: "Print one JSON object per event on standard output (start, progress, finish, skip, fail, summary), as a download does.")
    package var json = false

    @Flag(name: [.short, .customLong("quiet")], help: "Print only errors and the final summary.")
    package var quiet = false

    @Flag(name: [.short, .customLong("verbose")], help: "Log requests, retries and the worker's claims on standard error; -vv adds more.")
    package var verbose: Int

    package init() {}

    package func validate() throws {
        try QueueCommandSupport.check(queue: queue)
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
}
