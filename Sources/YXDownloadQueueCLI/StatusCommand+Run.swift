import Foundation
import Logging
import YXDownloadCLI
import YXJobStore
import YXTerminal

/// What `yxdownload status` does once parsed: reads the store and prints its report.
extension StatusCommand {
    /// Runs the command; returns the exit status.
    func execute(console: Console = .standard) -> Int32 {
        let location = QueueLocation(text: queue)
        let json = json
        // `status` only reads: a missing or empty file is no queue, and is not made one.
        let size = (try? FileManager.default.attributesOfItem(atPath: location.text)[.size] as? Int) ?? nil
        if !location.isPostgres && (size ?? 0) == 0 {
            console.writeErr("yxdownload: no queue at \(location) (yxdownload enqueue --queue \(location) creates it)\n")
            return ExitStatus.failure
        }
        return BlockingRun.run {
            let logger = Logger(label: "yxdownload.status", factory: { _ in SwiftLogNoOpLogHandler() })
            guard let store = await location.open(logger: logger, console: console) else { return ExitStatus.failure }
            do {
                let status = try await store.status()
                let running = try await store.jobs(
                    JobQuery(states: [.running], names: [StoredDownload.jobName], limit: 100_000))
                let report = QueueReport(queue: location.description, status: status, running: running)
                console.writeOut(json ? try report.json() + "\n" : report.table())
                try? await store.close()
                return ExitStatus.success
            } catch {
                console.writeErr("yxdownload: cannot read the queue \(location): \(StoreErrorText.short(error))\n")
                try? await store.close()
                return ExitStatus.failure
            }
        }
    }
}
