import Foundation
import Logging
import YXDownload
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
        if let folderProblem = location.folderProblem {
            console.writeErr("yxdownload: cannot open the queue \(location): \(folderProblem)\n")
            return ExitStatus.failure
        }
        if !location.isPostgres && (size ?? 0) == 0 {
            console.writeErr("yxdownload: no queue at \(location) (yxdownload enqueue --queue \(location) creates it)\n")
            return ExitStatus.failure
        }
        return BlockingRun.run {
            let logger = Logger(label: "yxdownload.status", factory: { _ in SwiftLogNoOpLogHandler() })
            guard let store = await location.open(logger: logger, console: console) else { return ExitStatus.failure }
            do {
                if failed {
                    let lines = try await Self.failedLines(in: store, json: json)
                    console.writeOut(lines.map { $0 + "\n" }.joined())
                    try? await store.close()
                    return ExitStatus.success
                }
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

    /// The downloads that failed for good or were discarded, one line each, oldest first, as the worker
    /// printed them: `fail  FILE  WHY (URL)` (a discarded job whose parameters do not decode is named
    /// `job N`), or with `json` the JSON event.
    static func failedLines(in store: any JobStore, json: Bool) async throws -> [String] {
        var lines: [String] = []
        var after: JobID?
        while true {
            let page = try await store.jobs(
                JobQuery(states: [.failed, .discarded], names: [StoredDownload.jobName], after: after, limit: 1000))
            for record in page {
                let download = try? JSONDecoder().decode(StoredDownload.self, from: record.payload)
                let item = DownloadJobRunner.discardedItem(record.id, download, file: download?.relativePath)  // escaped
                var why = PrintableText.escaped(record.message ?? record.state.rawValue)
                if record.state == .discarded { why = "discarded: " + why }
                if json {
                    lines.append(
                        JSONLine([
                            "event": .string("fail"), "url": .string(item.url), "file": .string(item.file),
                            "error": .string(why), "id": .int(record.id.rawValue),
                        ]).text)
                } else {
                    lines.append("fail  \(item.file)  \(why)" + (item.url.isEmpty ? "" : " (\(item.url))"))
                }
            }
            guard page.count == 1000, let last = page.last else { return lines }
            after = last.id
        }
    }
}
