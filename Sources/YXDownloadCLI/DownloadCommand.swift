import ArgumentParser
import Foundation
import YXQueue
import YXDownload
import YXTerminal

/// `yxdownload [options] URL…`, `yxdownload [options] -i LIST [URL…]`, `yxdownload [options] LIST`: the
/// download, the default subcommand of ``YXDownloadCommand``. Its options, their checks and the run
/// (SPEC §4).
struct DownloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Download files over HTTP and HTTPS: several at a time, resumable, verified.",
        usage: """
            yxdownload [<options>] <url> ...
            yxdownload [<options>] -i <list> [<url> ...]
            yxdownload [<options>] <list>
            """,
        discussion: """
            Three ways to give URLs, which can be mixed (one run, one summary):
              yxdownload https://example.com/a.iso https://example.com/b.iso
              yxdownload -i urls.txt            a list; '-i -' reads standard input
              yxdownload urls.txt -j 8          a lone argument that is not a URL is a list

            A list has one http or https URL per line; blank lines and lines starting with '#' are \
            ignored. Indented lines under a URL set options for that file, as in aria2:

              https://example.com/images/disk.iso
                out=debian.iso        file name (default: the URL's last part)
                dir=isos              folder under --dir
                checksum=sha-256=HEX  also md5=, sha-1=, sha-512=

            Every URL and list line is checked first: a bad one is reported (as FILE:LINE: reason for a \
            list) and nothing is downloaded. Two downloads that would write the same file get NAME, \
            NAME.1, NAME.2, ...

            Partial files: data goes to NAME.part in the output folder (what resuming needs is kept on \
            it, or in a small NAME.part.meta beside it), and becomes NAME only when complete and verified. \
            After a failure, Ctrl-C or a crash, run the same command again: each .part resumes where it \
            stopped. An existing NAME is skipped (--overwrite replaces it).

            Output: progress bars on a terminal, one line per file otherwise, JSON lines with --json; a \
            summary on standard error. -v logs each request, retry, resume and rename on standard error; \
            -vv adds curl's connection details.

            Exit status: 0 all downloaded or skipped, 1 some download failed (or the list changed), 2 \
            bad usage or input (nothing was downloaded), 130 interrupted (Ctrl-C), 143 terminated \
            (SIGTERM), 129 hung up (SIGHUP: the terminal went away; under nohup it is ignored).
            """
    )

    @OptionGroup var arguments: DownloadArguments

    /// How many downloads are submitted to the dispatcher at once: `-j`, and with one connection per
    /// file as many again (at most 64 more), waiting in the transfer queue, plus `finalizing`.
    ///
    /// A download waiting there starts on the thread that ended the previous one, at once, instead of
    /// after a hand-off to the run's queue (about a millisecond between requests, issue 14). That keeps
    /// "`-j N` downloads at once" because, with `-x 1`, a download transfers in one operation on the
    /// transfer queue, whose limit is `N`, holding its slot from its first request to its last byte,
    /// retries included (``DownloadOptions/keepsSlotWhileWaiting``). A download whose file must then be
    /// flushed to disk (the default) gives its slot to the next one meanwhile:
    /// `finalizing` more (``DescriptorBudget/finalizing(_:connections:)``) keep the transfers going while
    /// files wait for the disk. With `-x` above 1 a download is a probe, parts and a finalize step that
    /// take and give back slots of their own, so the queues cannot count downloads: the window is `-j`
    /// itself. (One exception with `-x 1`: a `.part` that an earlier run fetched with several
    /// connections resumes as several parts, which a waiting download may overtake.)
    static func window(jobs: Int, connections: Int, finalizing: Int = 0) -> Int {
        connections == 1 ? jobs + min(jobs, 64) + finalizing : jobs
    }

    /// Runs the command; returns the exit status.
    func execute(console: Console = .standard) -> Int32 {
        guard case .success(let sources) = arguments.source.sources else {
            return ExitStatus.usage  // validate() said why
        }
        // OpenSSL's first-use work runs on another core while the list is checked, if the run uses HTTPS.
        let checked = CheckedSources.check(
            sources, console: console, outcome: "nothing was downloaded", onHTTPS: LibcurlSetUp.warmUpTLSInBackground)
        guard let checked else {
            return ExitStatus.usage
        }
        guard let directory = OutputDirectory.create(arguments.dir, console: console) else { return ExitStatus.usage }
        let budget = DescriptorBudget.current
        let fitting = budget.jobs(arguments.jobs, connections: arguments.connections, console: console)
        var options = arguments.downloadOptions
        let finalizing = options.syncBeforeRename ? budget.finalizing(fitting, connections: arguments.connections) : 0
        let window = Self.window(jobs: fitting, connections: arguments.connections, finalizing: finalizing)
        options.keepsSlotWhileWaiting = window > fitting

        let screen = !arguments.json && !arguments.quiet && console.isTerminal ? TerminalScreen(console: console) : nil
        let reporter: any RunReporter =
            if arguments.json { JSONReporter(console: console) }
            else if let screen { TerminalReporter(screen: screen, console: console) }
            else { PlainReporter(console: console, quiet: arguments.quiet) }
        let logger = DiagnosticLog.logger(verbosity: arguments.verbose) { line in
            if let screen { screen.print([line], toStandardError: true) } else { console.writeErr(line + "\n") }
        }
        // The dispatcher bounds the downloads submitted at once; it logs nothing (a failure is reported
        // once, by the reporter).
        let dispatcher = Dispatcher(
            name: "yxdownload", queues: DownloadQueue.limits(transfers: fitting * arguments.connections), maxPendingJobs: window)
        var configuration = Downloader.Configuration(
            name: "yxdownload", maxConcurrentTransfers: fitting * arguments.connections, maxBytesPerSecond: arguments.maxSpeed?.bytesPerSecond,
            defaultOptions: options)
        configuration.logsConnectionDetails = arguments.verbose >= 2
        // The run's downloader: its engine's threads and curl handles end before the process exits.
        let downloader = Downloader(configuration: configuration, dispatcher: dispatcher, logger: logger)
        defer { downloader.shutdown() }
        let run = DownloadRun(
            settings: .init(window: window, directoryText: arguments.dir, directory: directory, options: options),
            reporter: reporter, downloader: downloader, listed: checked.listed)
        return run.run(checked.entries())
    }
}
