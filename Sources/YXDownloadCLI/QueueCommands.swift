import ArgumentParser
@_spi(YXQueueInternals) import YXQueue
import YXTerminal

/// What runs `yxdownload enqueue | worker | status` once they are parsed.
///
/// Their options, checks and help are defined in this module, so `yxdownload` can parse them, print their
/// help and completions, and report usage errors itself (its completion scripts and `help enqueue`, and
/// everything when `yxdownload-queue` is missing). Running them needs the job stores (SQLite,
/// PostgreSQL, SwiftNIO, swift-service-lifecycle), which a download never uses: linked into `yxdownload`
/// they cost every download about 5 MiB of resident memory and a quarter more start-up work (the
/// runtime's conformance lookups scan every record in the binary). So they live in a second program,
/// `yxdownload-queue`, which passes its implementation of this protocol to
/// ``YXDownloadMain/run(_:queueCommands:)``; `yxdownload` without one replaces itself with that
/// program (``QueueProgram``).
package protocol QueueCommands: Sendable {
    /// Why `--queue` cannot name a store, or `nil` if it can. Called while parsing.
    func problem(withQueue text: String) -> String?
    /// Runs `enqueue`; returns the exit status.
    func enqueue(_ command: EnqueueCommand, console: Console) -> Int32
    /// Runs `worker`; returns the exit status.
    func worker(_ command: WorkerCommand, console: Console) -> Int32
    /// Runs `status`; returns the exit status.
    func status(_ command: StatusCommand, console: Console) -> Int32
}

/// The ``QueueCommands`` of this process, if it has them: set before parsing, read by the subcommands'
/// `validate()`, which ArgumentParser calls without context.
package enum QueueCommandSupport {
    private static let installed = Locked<(any QueueCommands)?>(nil)

    /// Makes `commands` the ones the subcommands' checks and runs use.
    static func install(_ commands: (any QueueCommands)?) {
        installed.withLock { $0 = commands }
    }

    /// The installed commands, if any.
    static var commands: (any QueueCommands)? { installed.withLock { $0 } }

    /// Checks a `--queue` value: not empty here; whether it names a store (a PostgreSQL URL that
    /// parses) where the stores are linked, in `yxdownload-queue`, which parses the arguments of a
    /// subcommand to run.
    static func check(queue text: String) throws {
        guard !text.isEmpty else { throw ValidationError("--queue must not be empty.") }
        if let problem = commands?.problem(withQueue: text) { throw ValidationError(problem) }
    }
}
