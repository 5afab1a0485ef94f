import Foundation
import YXDownloadCLI
import YXTerminal

/// What `yxdownload worker` does once parsed: checks the folder and the descriptor budget, then runs the
/// worker (``WorkerSettings``).
extension WorkerCommand {
    /// Runs the command; returns the exit status.
    func execute(console: Console = .standard) -> Int32 {
        let directory = URL(fileURLWithPath: dir, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            console.writeErr("yxdownload: cannot create the output directory \(dir): \(error.localizedDescription)\n")
            return ExitStatus.usage
        }
        let budget = DescriptorBudget.current
        let fitting = budget.jobs(jobs, connections: connections)
        if fitting < jobs, let limit = budget.limit {
            console.writeErr(
                "yxdownload: the limit of \(limit) open files (ulimit -n) leaves room for \(fitting) download"
                    + "\(fitting == 1 ? "" : "s") at once with -x \(connections); running \(fitting) instead of \(jobs)\n")
        }
        let settings = WorkerSettings(
            location: QueueLocation(text: queue), directory: directory, directoryText: dir, jobs: fitting,
            connections: connections, maxSpeed: maxSpeed?.bytesPerSecond, exitWhenEmpty: exitWhenEmpty,
            recoveryBound: .milliseconds(Int64(lease * 1000)), grace: .milliseconds(Int64(grace * 1000)), json: json,
            quiet: quiet, verbose: verbose)
        return BlockingRun.run { await settings.run(console: console) }
    }
}
