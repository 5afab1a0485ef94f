import ArgumentParser
import Foundation
import Logging
import YXDownload
import YXJobStore
import YXTerminal

/// `yxdownload enqueue --queue STORE [options] (URL... | -i LIST)`: checks the list as a download
/// does (same parsing, naming and collision rules; a bad line stores nothing and exits 2), then stores
/// one persistent download job per entry, all in one transaction, for `yxdownload worker` to run.
///
/// A job's unique key is its destination: an entry whose file a live job (waiting, queued or running)
/// already has joins that job instead of being stored again, so enqueueing the same list twice does not
/// download twice.
struct EnqueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
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
            joins that job, so enqueueing a list twice downloads each file once. A file that is already \
            complete in the worker's folder is skipped (counted as skipped) unless --overwrite.

            --per-host N limits how many downloads from one host (scheme, host and port) run at once, \
            counted across every worker of the store. The limit stays in the store for that host and \
            applies to its downloads queued later too; 'status' lists it.

              yxdownload enqueue --queue jobs.sqlite -i urls.txt
              yxdownload worker --queue jobs.sqlite -d downloads -j 8
              yxdownload status --queue jobs.sqlite

            Exit status: 0 stored (or joined), 1 the store failed, 2 bad usage or input (nothing was \
            stored).
            """
    )

    @OptionGroup var source: SourceOptions

    @Option(
        name: .customLong("queue"),
        help: ArgumentHelp("The job store: an SQLite file path or a postgres:// URL.", valueName: "STORE"),
        completion: .file())
    var queue: String

    @Option(
        name: .customLong("per-host"),
        help: ArgumentHelp(
            "At most N of these downloads from one host at once, across all workers of the store (kept in the store for the host until changed).",
            valueName: "N"))
    var perHost: Int?

    @OptionGroup var request: RequestOptions

    @Flag(name: [.short, .customLong("quiet")], help: "Print only errors.")
    var quiet = false

    func validate() throws {
        if case .failure(let problem) = source.sources {
            throw ValidationError(problem.description.replacingOccurrences(of: "nothing to download", with: "nothing to queue"))
        }
        if let perHost, !(1...1000).contains(perHost) {
            throw ValidationError("--per-host must be between 1 and 1000 (got \(perHost)).")
        }
        do {
            try QueueLocation(text: queue).validate()
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// Runs the command; returns the exit status.
    func execute(console: Console = .standard) -> Int32 {
        guard case .success(let sources) = source.sources else {
            return ExitStatus.usage  // validate() said why
        }
        guard let checked = CheckedSources.check(sources, console: console, outcome: "nothing was stored") else {
            return ExitStatus.usage
        }
        // Named as a download run names them: the same list gives the same files, hence the same keys.
        var requests: [JobRequest] = []
        requests.reserveCapacity(checked.listed)
        var names = OutputNames()
        var entries = checked.entries()
        let options = request.stored
        do {
            while let entry = entries.next() {
                let name = names.claim(directory: entry.dir, name: entry.out ?? FileNaming.name(for: entry.url))
                let download = StoredDownload(
                    url: entry.url.absoluteString, path: entry.dir + [name], checksum: entry.checksum?.description,
                    options: options)
                requests.append(try download.request())
            }
        } catch {
            console.writeErr("yxdownload: cannot encode a download job: \(error)\n")
            return ExitStatus.failure
        }
        if let failure = entries.failure {
            console.writeErr("yxdownload: \(failure); nothing was stored.\n")
            return ExitStatus.failure
        }
        let location = QueueLocation(text: queue)
        let quiet = quiet
        let batch = requests
        let limits = perHost.map { limit in
            Dictionary(requests.compactMap { $0.options.concurrencyKey }.map { ($0, limit) }, uniquingKeysWith: { a, _ in a })
        } ?? [:]
        return BlockingRun.run {
            await Self.store(batch, limits: limits, in: location, console: console, quiet: quiet)
        }
    }

    /// Sets the per-host limits, then stores the jobs in one transaction and says how many were new.
    private static func store(
        _ requests: [JobRequest], limits: [String: Int], in location: QueueLocation, console: Console, quiet: Bool
    ) async -> Int32 {
        let store: any JobStore
        do {
            store = try await location.open(logger: Logger(label: "yxdownload.enqueue", factory: { _ in SwiftLogNoOpLogHandler() }))
        } catch {
            console.writeErr("yxdownload: cannot open the queue \(location): \(error)\n")
            return ExitStatus.failure
        }
        var status = ExitStatus.success
        do {
            // Before the jobs: a worker must never claim one of them while its host has no limit yet.
            for (key, limit) in limits.sorted(by: { $0.key < $1.key }) {
                try await store.setConcurrencyLimit(limit, forKey: key)
            }
            let results = requests.isEmpty ? [] : try await store.enqueue(requests)
            let new = results.filter(\.isNew).count
            if !quiet {
                console.writeOut(
                    "queued \(results.count) download\(results.count == 1 ? "" : "s") in \(location): "
                        + "\(new) new, \(results.count - new) already queued\n")
            }
        } catch {
            console.writeErr("yxdownload: cannot store the downloads in \(location): \(error); nothing was stored.\n")
            status = ExitStatus.failure
        }
        try? await store.close()
        return status
    }
}
