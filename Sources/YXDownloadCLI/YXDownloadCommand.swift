import ArgumentParser
import YXDownload

/// `yxdownload`: the root command. Downloading is its default subcommand (``DownloadCommand``), so
/// `yxdownload URL…`, `yxdownload -i urls.txt` and `yxdownload urls.txt -j 5` are downloads.
///
/// The other subcommands keep downloads in a job store (SPEC §6): `yxdownload enqueue | worker | status`
/// (``EnqueueCommand``, ``WorkerCommand``, ``StatusCommand``). A first argument that names one runs it,
/// anything else is a download. ``YXDownloadMain`` shows the
/// download's help for a bare `yxdownload --help`, with the list of subcommands once there are more.
struct YXDownloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "yxdownload",
        abstract: DownloadCommand.configuration.abstract,
        version: YXDownloadVersion.string,
        subcommands: [DownloadCommand.self, EnqueueCommand.self, WorkerCommand.self, StatusCommand.self],
        defaultSubcommand: DownloadCommand.self
    )
}
