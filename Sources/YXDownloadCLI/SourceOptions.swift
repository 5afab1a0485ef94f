import ArgumentParser

/// Where the URLs come from: URLs on the command line, a lone list file, or `-i LIST` (`-` is standard
/// input). The download (``DownloadArguments``) and `yxdownload enqueue` (``EnqueueCommand``) take
/// them as one option group; each command checks them in its own `validate()`, in its own words.
struct SourceOptions: ParsableArguments {
    @Argument(
        help: ArgumentHelp("URLs to download, or one list file ('-': standard input).", valueName: "url-or-list"),
        completion: .file())
    var inputs: [String] = []

    @Option(
        name: [.customShort("i", allowingJoined: true), .customLong("input-file")],
        help: ArgumentHelp("A list of URLs, one per line ('-': standard input).", valueName: "LIST"),
        completion: .file())
    var inputFile: String?

    /// The sources these arguments name, or why they name none.
    var sources: Result<DownloadSources, DownloadSources.Problem> {
        DownloadSources.from(arguments: inputs, inputFile: inputFile)
    }
}
