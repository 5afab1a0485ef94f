import ArgumentParser
import Foundation
import YXDownload
import YXQueue

/// The download's arguments and options (SPEC §4), with their checks: what ``DownloadCommand`` runs
/// with, and what ``CommandShape`` shows to shells and the man page.
struct DownloadArguments: ParsableArguments {
    @OptionGroup var source: SourceOptions

    @Option(name: [.customShort("j", allowingJoined: true), .customLong("jobs")], parsing: .unconditional, help: ArgumentHelp("Downloads transferring at the same time.", valueName: "N"))
    var jobs = 5

    @Option(
        name: [.customShort("d", allowingJoined: true), .customLong("dir")], help: ArgumentHelp("Output directory, created if missing.", valueName: "DIR"),
        completion: .directory)
    var dir = "."

    @Option(
        name: [.customShort("x", allowingJoined: true), .customLong("connections")],
        parsing: .unconditional,
        help: ArgumentHelp("Connections per file, where the server accepts ranges (1-16).", valueName: "N"))
    var connections = 1

    @Option(
        name: .customLong("max-speed"),
        parsing: .unconditional,
        help: ArgumentHelp("Overall speed limit in bytes per second: 500K, 2M, 1.5G (binary units).", valueName: "RATE"))
    var maxSpeed: ByteRate?

    @OptionGroup var request: RequestOptions

    @Flag(help: "Print one JSON object per event on standard output instead of progress.")
    var json = false

    @Flag(name: [.short, .customLong("quiet")], help: "Print only errors and the final summary.")
    var quiet = false

    @Flag(
        name: [.short, .customLong("verbose")],
        help: "Log requests, retries, resumes and renames on standard error; -vv adds curl's connection details.")
    var verbose: Int

    func validate() throws {
        if case .failure(let problem) = source.sources {
            throw ValidationError(problem.description)
        }
        guard (1...1000).contains(jobs) else { throw ValidationError("--jobs must be between 1 and 1000 (got \(jobs)).") }
        guard (1...16).contains(connections) else {
            throw ValidationError("--connections must be between 1 and 16 (got \(connections)).")
        }
        guard !dir.isEmpty else { throw ValidationError("--dir must not be empty.") }
    }

    /// The download options these flags mean.
    var downloadOptions: DownloadOptions {
        var options = DownloadOptions()
        options.connections = connections
        request.stored.apply(to: &options)
        options.computeSHA256 = json
        return options
    }
}
