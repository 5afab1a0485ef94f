import ArgumentParser

/// `yxdownload status --queue STORE [--json]`: the downloads of a store by state with their bytes, and
/// the ones running on each worker with their progress (`QueueReport`, in `yxdownload-queue`, which runs
/// it: ``QueueCommands``).
package struct StatusCommand: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a queue: counts by state, bytes, progress per worker.",
        usage: "yxdownload status --queue <store> [--json] [--failed]",
        discussion: """
            States: waiting, available (queued, or waiting for a retry or for a download given back for \
            later), running, succeeded, failed, canceled, discarded (a job no worker can run). Bytes are \
            those the workers recorded: whole files for succeeded downloads, the bytes so far for running ones (written about twice a \
            second), what their last attempt fetched for the others; the total line counts the \
            succeeded and running ones. --json prints the same as one JSON object on one line.

            --failed lists the downloads that failed for good instead, and those discarded (stored \
            by another version, say, so that no worker can read them), one line each: the file \
            (relative to the worker's --dir, or the job's number when it cannot be read), why, and the \
            URL (without credentials); with --json, one JSON object per line.

            Exit status: 0 shown, 1 the store cannot be read, 2 bad usage.
            """
    )

    @Option(
        name: .customLong("queue"),
        help: ArgumentHelp("The job store: an SQLite file path or a postgres:// URL.", valueName: "STORE"),
        completion: .file())
    package var queue: String

    @Flag(help: "Print one JSON object instead of the table.")
    package var json = false

    @Flag(help: "List the downloads that failed for good or were discarded, with why, instead of the table.")
    package var failed = false

    package init() {}

    package func validate() throws {
        try QueueCommandSupport.check(queue: queue)
    }
}
