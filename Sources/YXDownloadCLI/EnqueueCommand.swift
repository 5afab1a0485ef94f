import ArgumentParser
import YXDownload
import YXTerminal

/// `yxdownload enqueue --queue STORE [options] (URL... | -i LIST)`: checks the list as a download
/// does (same parsing, naming and collision rules; a bad line stores nothing and exits 2), then stores
/// one persistent download job per entry, all in one transaction, for `yxdownload worker` to run.
///
/// A job's unique key is its destination: an entry whose file a live job (waiting, queued or running)
/// already has joins that job instead of being stored again, so enqueueing the same list twice does not
/// download twice. An entry whose file a live job downloads from another URL (or with another checksum)
/// is reported, and nothing is stored.
///
/// Only its options are defined here; `yxdownload-queue` runs it (``QueueCommands``).
package struct EnqueueCommand: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Store downloads in a queue (a job store) for workers.",
        usage: """
            yxdownload enqueue --queue <store> [<options>] <url> ...
            yxdownload enqueue --queue <store> [<options>] -i <list> [<url> ...]
            """,
        discussion: """
            The URLs and the list are checked exactly as for a download (see 'yxdownload --help' for \
            the list format: out=, dir=, checksum=): a bad line is reported as FILE:LINE: reason and \
            nothing is stored. Each entry becomes one persistent job: its URL, its file (relative to \
            the worker's --dir), its checksum and the options below.

            The store is an SQLite file (created on first use; workers on this machine share it) or a \
            postgres:// URL (workers on many machines).

            The destination is the job's unique key: an entry whose file is already queued or running \
            joins that job, so enqueueing a list twice downloads each file once. An entry whose file is \
            queued from another URL, or with another checksum, would never be downloaded: it is \
            reported and nothing is stored. A file that is already complete in the worker's folder is \
            skipped (counted as skipped) unless --overwrite.

            --per-host N limits how many downloads from one host (scheme, host and port) run at once, \
            counted across every worker of the store. The limit stays in the store for that host and \
            applies to its downloads queued later too; 'status' lists it.

              yxdownload enqueue --queue jobs.sqlite -i urls.txt
              yxdownload worker --queue jobs.sqlite -d downloads -j 8
              yxdownload status --queue jobs.sqlite

            Exit status: 0 stored (or joined), 1 the store failed, the list changed after its check or \
            an entry's file is queued for another download (nothing was stored), 2 bad usage or input \
            (nothing was stored).
            """
    )

    @OptionGroup var source: SourceOptions

    @Option(
        name: .customLong("queue"),
        help: ArgumentHelp("The job store: an SQLite file path or a postgres:// URL.", valueName: "STORE"),
        completion: .file())
    package var queue: String

    @Option(
        name: .customLong("per-host"),
        parsing: .unconditional,
        help: ArgumentHelp(
            "At most N of these downloads from one host at once, across all workers of the store (kept in the store for the host until changed; each download uses up to the worker's -x connections).",
            valueName: "N"))
    package var perHost: Int?

    @OptionGroup var request: RequestOptions

    @Flag(name: [.short, .customLong("quiet")], help: "Print only errors.")
    package var quiet = false

    package init() {}

    /// How the problem of no source at all begins here (a download says "nothing to download").
    static let nothingToQueue = "nothing to queue"

    package func validate() throws {
        if case .failure(let problem) = source.sources {
            throw ValidationError(problem.description.replacing(DownloadSources.nothingToDownload, with: Self.nothingToQueue))
        }
        if let perHost, !(1...1000).contains(perHost) {
            throw ValidationError("--per-host must be between 1 and 1000 (got \(perHost)).")
        }
        try QueueCommandSupport.check(queue: queue)
    }
}

/// A download that `yxdownload enqueue` stores: an entry of the command line or the list, named as a
/// download run names it.
package struct EnqueueEntry: Sendable, Equatable {
    /// The URL as written (credentials included: the worker needs them).
    package var url: String
    /// The `dir=` components, then the file name.
    package var path: [String]
    /// `checksum=` as `ALGORITHM=HEX`, if given.
    package var checksum: String?
}

extension EnqueueCommand {
    /// The downloads to store: the list checked and its files named exactly as a download run checks and
    /// names them, so the same list gives the same files, hence the same unique keys.
    ///
    /// - Throws: After printing why, `ExitCode(2)` for a bad list: nothing is stored.
    package func checkedList(console: Console) throws(ExitCode) -> EnqueueList {
        guard case .success(let sources) = source.sources else {
            throw ExitCode(ExitStatus.usage)  // validate() said why
        }
        guard let checked = CheckedSources.check(sources, console: console, outcome: "nothing was stored") else {
            throw ExitCode(ExitStatus.usage)
        }
        return EnqueueList(checked: checked)
    }

    /// The per-download options to store with each job.
    package var storedOptions: StoredDownloadOptions { request.stored }
}
