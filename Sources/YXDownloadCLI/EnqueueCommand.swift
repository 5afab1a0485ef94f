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

              yxdownload enqueue --queue jobs.sqlite -i urls.txt
              yxdownload worker --queue jobs.sqlite -d downloads -j 8
              yxdownload status --queue jobs.sqlite

            Exit status: 0 stored (or joined), 1 the store failed, 2 bad usage or input (nothing was \
            stored).
            """
    )

    @Argument(
        help: ArgumentHelp("URLs to queue, or one list file ('-': standard input).", valueName: "url-or-list"),
        completion: .file())
    var inputs: [String] = []

    @Option(
        name: [.customShort("i"), .customLong("input-file")],
        help: ArgumentHelp("A list of URLs, one per line ('-': standard input).", valueName: "LIST"),
        completion: .file())
    var inputFile: String?

    @Option(
        name: .customLong("queue"),
        help: ArgumentHelp("The job store: an SQLite file path or a postgres:// URL.", valueName: "STORE"),
        completion: .file())
    var queue: String

    @OptionGroup var request: RequestOptions

    @Flag(name: [.short, .customLong("quiet")], help: "Print only errors.")
    var quiet = false

    func validate() throws {
        if case .failure(let problem) = DownloadSources.from(arguments: inputs, inputFile: inputFile) {
            throw ValidationError(problem.description.replacingOccurrences(of: "nothing to download", with: "nothing to queue"))
        }
        do {
            try QueueLocation(text: queue).validate()
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// Runs the command; returns the exit status.
    func execute(console: Console = .standard) -> Int32 {
        guard case .success(let sources) = DownloadSources.from(arguments: inputs, inputFile: inputFile) else {
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
        return BlockingRun.run {
            await Self.store(batch, in: location, console: console, quiet: quiet)
        }
    }

    /// Stores the jobs in one transaction and says how many were new.
    private static func store(_ requests: [JobRequest], in location: QueueLocation, console: Console, quiet: Bool) async -> Int32 {
        let store: any JobStore
        do {
            store = try await location.open(logger: Logger(label: "yxdownload.enqueue", factory: { _ in SwiftLogNoOpLogHandler() }))
        } catch {
            console.writeErr("yxdownload: cannot open the queue \(location): \(error)\n")
            return ExitStatus.failure
        }
        var status = ExitStatus.success
        do {
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
