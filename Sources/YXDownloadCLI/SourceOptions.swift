import ArgumentParser

/// Where the URLs come from: URLs on the command line, a lone list file, or `-i LIST` (`-` is standard
/// input). The download (``DownloadArguments``) and `yxdownload enqueue` (``EnqueueCommand``) take
/// them as one option group; each command checks them in its own `validate()`, in its own words.
struct SourceOptions: ParsableArguments {
    @Argument(
        help: ArgumentHelp("URLs to download, or one list file ('-': standard input).", valueName: "url-or-list"),
        completion: .file())
    var inputs: [String] = []

    /// Every `-i` given: one is allowed, and a second is an error rather than silently the one read.
    @Option(
        name: [.customShort("i", allowingJoined: true), .customLong("input-file")],
        help: ArgumentHelp("A list of URLs, one per line ('-': standard input).", valueName: "LIST"),
        completion: .file())
    var inputFiles: [String] = []

    /// The list `-i` names, if it names one.
    var inputFile: String? { inputFiles.last }

    /// The sources these arguments name, or why they name none.
    var sources: Result<DownloadSources, DownloadSources.Problem> {
        guard inputFiles.count <= 1 else {
            return .failure(DownloadSources.Problem(description: "one list only: -i is given \(inputFiles.count) times"))
        }
        return DownloadSources.from(arguments: inputs, inputFile: inputFile)
    }
}
