import ArgumentParser
import Foundation
import YXDownload

/// `yxdownload [options] <input-file>`: the options, their checks and the run (SPEC §4).
struct YXDownloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "yxdownload",
        abstract: "Download every URL of a list: several at a time, resumable, verified.",
        discussion: """
            The input file has one http or https URL per line ('-' reads standard input). Blank lines and \
            lines starting with '#' are ignored. Indented lines under a URL set options for it, as in aria2:

              https://example.com/images/disk.iso
                out=debian.iso        file name (default: the URL's last part)
                dir=isos              folder under --dir
                checksum=sha-256=HEX  also md5=, sha-1=, sha-512=

            The whole list is checked first: each bad line is reported as FILE:LINE: reason and nothing is \
            downloaded. Data goes to NAME.part and is renamed to NAME only when complete (and verified). \
            An existing NAME is skipped; an interrupted download resumes when you run the same command again. \
            Two entries that would write the same file get NAME, NAME.1, NAME.2, …

            Output: live progress bars on a terminal, one line per file otherwise, JSON lines with --json; \
            a summary on standard error in every case.

            Exit status: 0 all downloaded or skipped, 1 some download failed, 2 bad usage or input file, \
            130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
            """,
        version: YXDownloadVersion.string
    )

    @Argument(help: ArgumentHelp("A file with one URL per line, or '-' for standard input.", valueName: "input-file"))
    var inputFile: String

    @Option(name: [.short, .customLong("jobs")], help: ArgumentHelp("Downloads at the same time.", valueName: "N"))
    var jobs = 5

    @Option(name: [.short, .customLong("dir")], help: ArgumentHelp("Output directory, created if missing.", valueName: "DIR"))
    var dir = "."

    @Option(
        name: [.customShort("x"), .customLong("connections")],
        help: ArgumentHelp("Connections per file, where the server accepts ranges (1-16).", valueName: "N"))
    var connections = 1

    @Option(help: ArgumentHelp("Retries after a transient error (per part with -x).", valueName: "N"))
    var retries = 5

    @Option(
        name: .customLong("retry-wait"),
        help: ArgumentHelp("First back-off in seconds; doubles each retry. Retry-After is honoured.", valueName: "SECONDS"))
    var retryWait: Double = 1

    @Option(help: ArgumentHelp("Give up an attempt when no byte arrived for this long.", valueName: "SECONDS"))
    var timeout: Double = 30

    @Option(name: .customLong("connect-timeout"), help: ArgumentHelp("Give up connecting after this long.", valueName: "SECONDS"))
    var connectTimeout: Double = 15

    @Option(
        name: [.customShort("H"), .customLong("header")],
        help: ArgumentHelp("Extra request header \"Name: value\"; repeatable.", valueName: "HEADER"))
    var headers: [String] = []

    @Option(
        name: [.customShort("U"), .customLong("user-agent")],
        help: ArgumentHelp("User-Agent header (default: yxdownload/\(YXDownloadVersion.string)).", valueName: "TEXT"))
    var userAgent: String?

    @Option(
        name: .customLong("max-speed"),
        help: ArgumentHelp("Overall speed limit in bytes per second: 500K, 2M, 1.5G (binary units).", valueName: "RATE"))
    var maxSpeed: ByteRate?

    @Flag(help: "Replace existing files instead of skipping them.")
    var overwrite = false

    @Flag(
        name: .customLong("no-sync"),
        help: ArgumentHelp(
            "Rename finished files without waiting for the disk (faster; a power cut can then leave an empty file under a final name, as with curl or wget)."))
    var noSync = false

    @Flag(name: [.customShort("k"), .customLong("insecure")], help: "Do not check TLS certificates (only for servers you trust).")
    var insecure = false

    @Flag(help: "Print one JSON object per event on standard output instead of progress.")
    var json = false

    @Flag(name: [.short, .customLong("quiet")], help: "Print only errors and the final summary.")
    var quiet = false

    func validate() throws {
        guard (1...1000).contains(jobs) else { throw ValidationError("--jobs must be between 1 and 1000 (got \(jobs)).") }
        guard (1...16).contains(connections) else {
            throw ValidationError("--connections must be between 1 and 16 (got \(connections)).")
        }
        guard (0...100).contains(retries) else { throw ValidationError("--retries must be between 0 and 100 (got \(retries)).") }
        guard retryWait.isFinite, (0...3600).contains(retryWait) else {
            throw ValidationError("--retry-wait must be between 0 and 3600 seconds.")
        }
        guard timeout.isFinite, timeout > 0 else { throw ValidationError("--timeout must be more than 0 seconds.") }
        guard connectTimeout.isFinite, connectTimeout > 0 else {
            throw ValidationError("--connect-timeout must be more than 0 seconds.")
        }
        guard !dir.isEmpty else { throw ValidationError("--dir must not be empty.") }
        for header in headers {
            guard let colon = header.firstIndex(of: ":"), colon != header.startIndex,
                !header[..<colon].contains(where: { $0 == " " || $0 == "\t" }),
                !header.contains(where: { $0 == "\r" || $0 == "\n" })
            else {
                throw ValidationError("--header must look like \"Name: value\" (got \"\(header)\").")
            }
        }
        if let userAgent, userAgent.contains(where: { $0 == "\r" || $0 == "\n" }) {
            throw ValidationError("--user-agent must be one line.")
        }
    }

    /// The download options these flags mean.
    var downloadOptions: DownloadOptions {
        var options = DownloadOptions()
        options.connections = connections
        options.retry = RetryPolicy(retries: retries, initialDelay: retryWait)
        options.headers = headers
        if let userAgent { options.userAgent = userAgent }
        options.connectTimeout = connectTimeout
        options.stallTimeout = timeout
        options.verifyTLS = !insecure
        options.overwrite = overwrite
        options.syncBeforeRename = !noSync
        options.computeSHA256 = json
        options.maxConcurrentTransfers = jobs * connections
        return options
    }

    /// Runs the command; returns the exit status.
    func execute(console: Console = .standard) -> Int32 {
        let list: InputList
        let check: InputList.Check
        do {
            list = try InputList(path: inputFile)
            check = try list.check()
        } catch {
            console.writeErr("yxdownload: \(error)\n")
            return ExitStatus.usage
        }
        guard check.errors.isEmpty else {
            for error in check.errors { console.writeErr("\(error)\n") }
            let count = check.errors.count
            console.writeErr(
                "yxdownload: \(count) invalid line\(count == 1 ? "" : "s") in \(list.displayName); nothing was downloaded.\n")
            return ExitStatus.usage
        }
        let directory = URL(fileURLWithPath: dir, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            console.writeErr("yxdownload: cannot create the output directory \(dir): \(error.localizedDescription)\n")
            return ExitStatus.usage
        }
        if check.entries == 0 { console.writeErr("yxdownload: \(list.displayName) has no URLs; nothing to do.\n") }

        let engine = TransferEngine.shared
        engine.setMaxSpeed(bytesPerSecond: maxSpeed?.bytesPerSecond)
        defer { engine.shutdown() }
        let reporter: any RunReporter =
            if json { JSONReporter(console: console) }
            else if console.isTerminal && !quiet { TerminalReporter(console: console, quiet: false) }
            else { PlainReporter(console: console, quiet: quiet) }
        let run = DownloadRun(
            settings: .init(jobs: jobs, directoryText: dir, directory: directory, options: downloadOptions),
            reporter: reporter, engine: engine, listed: check.entries)
        return run.run(list.entries())
    }
}
