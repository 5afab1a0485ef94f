import YXDownloadCLI
import YXTerminal

/// `yxdownload enqueue | worker | status` on the job stores: SQLite files and PostgreSQL
/// (``QueueLocation``).
struct StoreCommands: QueueCommands {
    func problem(withQueue text: String) -> String? {
        do {
            try QueueLocation(text: text).validate()
            return nil
        } catch {
            return error.description
        }
    }

    func enqueue(_ command: EnqueueCommand, console: Console) -> Int32 { command.execute(console: console) }

    func worker(_ command: WorkerCommand, console: Console) -> Int32 { command.execute(console: console) }

    func status(_ command: StatusCommand, console: Console) -> Int32 { command.execute(console: console) }
}
