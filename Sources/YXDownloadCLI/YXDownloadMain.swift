import ArgumentParser
import Foundation
import YXDownload
import YXTerminal

/// The entry point of `yxdownload`.
public enum YXDownloadMain {
    /// Parses `arguments` (without the program name), runs, and returns the exit status.
    ///
    /// argument-parser's own `main()` exits with 64 (`EX_USAGE`) for usage errors; SPEC §4 wants 2, so
    /// the errors are printed and mapped here. A bare `yxdownload --help` (or `-h`, or `help`), the
    /// completion scripts and the man page's description come from ``CommandShape``: the download's
    /// options at the top, where people look for them.
    public static func run(_ arguments: [String]) -> Int32 {
        run(arguments, queueCommands: nil)
    }

    /// Parses `arguments`, runs, and returns the exit status; `yxdownload enqueue | worker | status` run
    /// with `queueCommands`, or, without them, in `yxdownload-queue` (``QueueProgram``), which this
    /// process becomes.
    package static func run(_ arguments: [String], queueCommands: (any QueueCommands)?) -> Int32 {
        QueueCommandSupport.install(queueCommands)
        // `yxdownload enqueue | worker | status …` becomes `yxdownload-queue` before any parse: that program
        // parses the same arguments with the same code. Without it, the parse below still answers help
        // requests and usage errors, and a command to run says why that program did not start (the failure
        // of this attempt, not of a second one).
        var queueProgramFailure: String?
        if queueCommands == nil, let first = arguments.first, queueCommandNames.contains(first) {
            queueProgramFailure = QueueProgram.tryToReplaceProcess(arguments: arguments)
        }
        // The caller exits when this returns: not while libcurl's set-up still runs.
        defer { LibcurlSetUp.waitIfStarted() }
        if CommandShape.answers(arguments) {
            // The download's help, completions and man page description, with its options at the top.
            do {
                var parsed = try CommandShape.parseAsRoot(
                    arguments == ["help"] || CommandShape.isDownloadHelp(arguments) ? ["--help"] : arguments)
                try parsed.run()
            } catch {
                return report(error, of: CommandShape.self)
            }
            return ExitStatus.success
        }
        // Anything else may download: libcurl's set-up runs on the second core during the parse and the
        // list's check, not on this thread after them (about 1 ms before the first request).
        LibcurlSetUp.startInBackground()
        if let command = downloadParsedAlone(arguments) {
            return command.execute()
        }
        let command: DownloadCommand
        do {
            var parsed = try YXDownloadCommand.parseAsRoot(arguments)
            switch parsed {
            case let download as DownloadCommand:
                command = download
            case let enqueue as EnqueueCommand:
                return queueCommands?.enqueue(enqueue, console: .standard)
                    ?? replaced(arguments, knownFailure: queueProgramFailure)
            case let worker as WorkerCommand:
                return queueCommands?.worker(worker, console: .standard)
                    ?? replaced(arguments, knownFailure: queueProgramFailure)
            case let status as StatusCommand:
                return queueCommands?.status(status, console: .standard)
                    ?? replaced(arguments, knownFailure: queueProgramFailure)
            default:
                // `help <subcommand>` and other built-in commands print and throw CleanExit.
                try parsed.run()
                return ExitStatus.success
            }
        } catch {
            if let workerOption = workerOption(in: arguments) {
                Console.standard.writeErr(
                    "Error: enqueue has no \(workerOption): the worker's -d, -j, -x and --max-speed decide where and how "
                        + "stored downloads run (see 'yxdownload worker --help').\n")
                return ExitStatus.usage
            }
            return report(unknownOption(hiddenBy: error, in: arguments) ?? error, of: YXDownloadCommand.self)
        }
        return command.execute()
    }

    /// A download option that `enqueue` does not take, given to it (the worker's options decide the
    /// folder, the parallelism and the speed): argument-parser would report the value after it as a URL
    /// that is not one, since a command's check runs before unknown options are reported.
    static func workerOption(in arguments: [String]) -> String? {
        guard arguments.first == "enqueue" else { return nil }
        let workerOptions = ["-d", "--dir", "-j", "--jobs", "-x", "--connections", "--max-speed"]
        for argument in arguments.dropFirst() {
            if argument == "--" { return nil }
            // `-d DIR`, `-dDIR`, `--dir DIR`, `--dir=DIR`; not a header value such as `-d foo: bar`.
            guard !argument.contains(" " as Character) else { continue }
            let name = argument.hasPrefix("--") ? String(argument.prefix { $0 != "=" }) : String(argument.prefix(2))
            if workerOptions.contains(name) { return name }
        }
        return nil
    }

    /// The error of an unknown option that "nothing to download" (or `enqueue`'s "nothing to queue")
    /// hides, if that is the error.
    ///
    /// argument-parser checks a command's `validate()` before it reports the arguments the command did
    /// not take, so `yxdownload --frobnicate` alone would be told there is nothing to download. The same
    /// arguments with a URL added are parsed again (nothing runs, nothing is fetched or stored): if an
    /// unknown option is then the error, it is the one reported.
    static func unknownOption(hiddenBy error: any Error, in arguments: [String]) -> (any Error)? {
        let message = YXDownloadCommand.message(for: error)
        guard message.hasPrefix(DownloadSources.nothingToDownload) || message.hasPrefix(EnqueueCommand.nothingToQueue)
        else { return nil }
        do {
            _ = try YXDownloadCommand.parseAsRoot(arguments + ["https://example.invalid/"])
            return nil
        } catch {
            return YXDownloadCommand.message(for: error).hasPrefix("Unknown option") ? error : nil
        }
    }

    /// The download `arguments` ask for, parsed with the download's arguments alone, or nil: when an
    /// argument names a subcommand, and when parsing ends any other way than with a download to run (an
    /// error, a help or version request), since the root command's parse says that in its own words.
    ///
    /// The root's parse of the same download costs about 2 million instructions more (its subcommands'
    /// arguments are reflected too): half a millisecond at the start of every run. Its result is the
    /// same, since downloading is the root's default subcommand and takes every argument that names no
    /// other subcommand, with one exception where this parse is the one meant: a lone `-iLIST` whose
    /// name holds an `h` (`-i/home/me/urls`). The root reads a lone pack of short options for its
    /// built-in flags before it picks the default subcommand, and would find `-h` in it and print help.
    ///
    /// It parses with ``DownloadArgumentsAlone``, which spares argument-parser's look for a completion
    /// script request (see there); an argument that asks for one goes to the root's parse instead.
    static func downloadParsedAlone(_ arguments: [String]) -> DownloadCommand? {
        let otherCommands = YXDownloadCommand.configuration.subcommands.map { $0.configuration.commandName }
        guard
            !arguments.contains(where: {
                $0 == "help" || otherCommands.contains($0) || $0.hasPrefix("--generate-completion-script")
                    || $0.hasPrefix("---completion")
            })
        else { return nil }
        guard let alone = (try? DownloadArgumentsAlone.parseAsRoot(arguments)) as? DownloadArgumentsAlone else {
            return nil
        }
        var command = DownloadCommand()
        command.arguments = alone.arguments
        return command
    }

    /// The subcommands that run in `yxdownload-queue`: the root's, but the download.
    static let queueCommandNames = YXDownloadCommand.configuration.subcommands.filter { $0 != DownloadCommand.self }.map {
        $0.configuration.commandName ?? ""
    }

    /// Becomes `yxdownload-queue` with the same arguments, unless an earlier attempt failed with
    /// `knownFailure`; returns only if that fails, having said why.
    private static func replaced(_ arguments: [String], knownFailure: String?) -> Int32 {
        QueueProgram.replaceProcess(arguments: arguments, knownFailure: knownFailure, console: .standard)
    }

    /// Prints what parsing ended with (a help text, a version, a script, or a usage error) and returns
    /// the exit status: 0, or 2 for any error.
    private static func report(_ error: any Error, of command: any ParsableCommand.Type) -> Int32 {
        // Downloading is the default: `yxdownload --help` is its help, not `yxdownload download --help`.
        let message = command.fullMessage(for: error)
            .replacing("'yxdownload download --help'", with: "'yxdownload --help'")
        if command.exitCode(for: error) == .success {
            Console.standard.writeOut(message.isEmpty ? "" : message + "\n")
            return ExitStatus.success
        }
        Console.standard.writeErr(message + "\n")
        return ExitStatus.usage
    }
}
