import ArgumentParser

/// The download's arguments as a command of their own, for ``YXDownloadMain/downloadParsedAlone(_:)``:
/// the parse of a download as it starts, with nothing else.
///
/// argument-parser begins every parse of a root command by parsing the arguments twice more, as two
/// small commands that look for `--generate-completion-script`: 7.2 million of the 40.4 million
/// instructions a one-file download ran (callgrind, 2026-11-26), most of them the Swift runtime scanning
/// the binary's 5,953 protocol conformance records to answer its first questions about each type it
/// reflects. Without them the download runs 39.0 million: the main parse then asks most of the same
/// questions. argument-parser skips that look for a command that has a super-command
/// (`_superCommandName`, which otherwise only names the command in help texts, and this type's help is
/// never shown: a parse that ends in help, an error or a script goes to ``YXDownloadCommand``'s parse). Arguments that ask for a completion script never come here.
/// `_superCommandName` is argument-parser's underscored, experimental API: should a later version drop
/// it or parse differently with it, the only loss is this saving, since nothing but a download to run
/// is taken from this parse.
struct DownloadArgumentsAlone: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "download", _superCommandName: "yxdownload")

    @OptionGroup var arguments: DownloadArguments
}
