import ArgumentParser
import YXDownload

/// `yxdownload` as people use it: the download's arguments and options at the top (downloading is the
/// default subcommand), and the other subcommands, if any. What `--help`, the shells' completion scripts
/// and the man page show; commands are parsed by ``YXDownloadCommand``.
///
/// Made from the same option definitions as the download (``DownloadArguments``), so the help, the
/// completions and the man page cannot disagree with what the parser accepts.
struct CommandShape: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "yxdownload",
        abstract: DownloadCommand.configuration.abstract,
        usage: DownloadCommand.configuration.usage,
        discussion: DownloadCommand.configuration.discussion,
        version: YXDownloadVersion.string,
        subcommands: YXDownloadCommand.configuration.subcommands.filter { $0 != DownloadCommand.self }
    )

    @OptionGroup var arguments: DownloadArguments

    /// The arguments that ask for something this shape answers: help alone, a completion script, or the
    /// description of the options that man page generators read (`--experimental-dump-help`).
    static func answers(_ arguments: [String]) -> Bool {
        guard let first = arguments.first else { return false }
        if arguments.count == 1 && ["-h", "--help", "help", "--experimental-dump-help"].contains(first) { return true }
        if isDownloadHelp(arguments) { return true }
        return first == "--generate-completion-script" || first.hasPrefix("--generate-completion-script=")
    }

    /// `yxdownload download --help` (or `-h`, or `help download`): the download's help is the root's, with
    /// the list of the other subcommands.
    static func isDownloadHelp(_ arguments: [String]) -> Bool {
        arguments == ["help", "download"] || (arguments.count == 2 && arguments[0] == "download" && ["-h", "--help"].contains(arguments[1]))
    }
}
