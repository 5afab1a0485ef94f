import ArgumentParser
import Foundation
import Logging
import YXJobStore
import YXTerminal

/// `yxdownload status --queue STORE [--json]`: the downloads of a store by state with their bytes, and
/// the ones running on each worker with their progress (``QueueReport``).
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a queue: counts by state, bytes, progress per worker.",
        usage: "yxdownload status --queue <store> [--json]",
        discussion: """
            States: waiting, available (queued, or waiting for a retry), running, succeeded, failed, \
            canceled, discarded (a job no worker can run). Bytes are those the workers recorded: whole \
            files for succeeded downloads, the bytes so far for running ones (written about twice a \
            second). --json prints the same as one JSON object on one line.

            Exit status: 0 shown, 1 the store cannot be read, 2 bad usage.
            """
    )

    @Option(
        name: .customLong("queue"),
        help: ArgumentHelp("The job store: an SQLite file path or a postgres:// URL.", valueName: "STORE"),
        completion: .file())
    var queue: String

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    func validate() throws {
        do {
            try QueueLocation(text: queue).validate()
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// Runs the command; returns the exit status.
    func execute(console: Console = .standard) -> Int32 {
        let location = QueueLocation(text: queue)
        let json = json
        if !location.isPostgres && !FileManager.default.fileExists(atPath: location.text) {
            console.writeErr("yxdownload: no queue at \(location) (yxdownload enqueue --queue \(location) creates it)\n")
            return ExitStatus.failure
        }
        return BlockingRun.run {
            let logger = Logger(label: "yxdownload.status", factory: { _ in SwiftLogNoOpLogHandler() })
            let store: any JobStore
            do {
                store = try await location.open(logger: logger)
            } catch {
                console.writeErr("yxdownload: cannot open the queue \(location): \(error)\n")
                return ExitStatus.failure
            }
            do {
                let status = try await store.status()
                let running = try await store.jobs(
                    JobQuery(states: [.running], names: [StoredDownload.jobName], limit: 100_000))
                let report = QueueReport(queue: location.description, status: status, running: running)
                console.writeOut(json ? try report.json() + "\n" : report.table())
                try? await store.close()
                return ExitStatus.success
            } catch {
                console.writeErr("yxdownload: cannot read the queue \(location): \(error)\n")
                try? await store.close()
                return ExitStatus.failure
            }
        }
    }
}
