import Foundation
import YXDownloadCLI
import YXTerminal

#if canImport(Glibc)
import Glibc
#endif

/// What `yxdownload worker` does once parsed: checks the folder and the descriptor budget, then runs the
/// worker (``WorkerSettings``).
extension WorkerCommand {
    /// Runs the command; returns the exit status.
    func execute(console: Console = .standard) -> Int32 {
        guard let directory = OutputDirectory.create(dir, console: console) else { return ExitStatus.usage }
        // A worker that cannot write its folder would take jobs only to give them back: it does not start.
        guard access(directory.path, W_OK | X_OK) == 0 else {
            console.writeErr("yxdownload: cannot write into \(dir): \(String(cString: strerror(errno)))\n")
            return ExitStatus.usage
        }
        let budget = DescriptorBudget.current
        let fitting = budget.jobs(jobs, connections: connections, console: console)
        let settings = WorkerSettings(
            location: QueueLocation(text: queue), directory: directory, directoryText: dir, jobs: fitting,
            saving: budget.finalizing(fitting, connections: connections), connections: connections,
            maxSpeed: maxSpeed?.bytesPerSecond, exitWhenEmpty: exitWhenEmpty,
            recoveryBound: .milliseconds(Int64(lease * 1000)), grace: .milliseconds(Int64(grace * 1000)), json: json,
            quiet: quiet, verbose: verbose)
        return BlockingRun.run { await settings.run(console: console) }
    }
}
