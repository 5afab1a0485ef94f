import Foundation
import YXDownload
import YXTerminal

/// The end of the demo: what was downloaded and checked, how long it took, where the files are, and
/// the exit status.
struct DemoSummary {
    var downloads: [DownloadOutcome]
    /// Wall time of the download stage.
    var downloadSeconds: Double
    /// `nil` when the checksum stage did not run (Ctrl-C).
    var checksums: ChecksumStage.Outcome?
    /// Requests and connections the server saw.
    var requests: Int
    var connections: Int
    /// The dispatcher's queues, one per operation type.
    var queues: [String]
    var directory: URL
    var interrupted: Bool

    /// 130 after Ctrl-C, 1 when any download or checksum job did not finish, 0 otherwise.
    var exitStatus: Int32 {
        if interrupted { return 130 }
        let downloadsOK = downloads.allSatisfy(\.succeeded)
        let downloaded = downloads.filter(\.succeeded).count
        let checksumsOK = checksums.map { $0.failures.isEmpty && $0.reports.count == downloaded } ?? false
        return downloadsOK && checksumsOK ? 0 : 1
    }

    /// The summary, one line per fact.
    var lines: [String] {
        let done = downloads.filter(\.succeeded)
        let bytes = done.reduce(Int64(0)) { $0 + ($1.result?.bytes ?? 0) }
        let rate = downloadSeconds > 0 ? Double(bytes) / downloadSeconds : 0
        var lines = ["Summary"]
        lines.append(
            "  downloads   \(done.count) of \(downloads.count) files, \(ByteFormatting.bytes(bytes)) in "
                + "\(ByteFormatting.elapsed(downloadSeconds)), \(ByteFormatting.rate(rate)) (paced by the server)")
        for download in downloads {
            switch download.ending {
            case .finished: break
            case .failed(let reason): lines.append("              failed: \(download.file.name): \(reason)")
            case .canceled: lines.append("              canceled: \(download.file.name)")
            }
        }
        lines.append("  server      \(requests) requests on \(connections) connections")
        if let checksums {
            lines.append(
                "  checksums   \(checksums.reports.count) of \(done.count) done (\(checksums.delegateJobs) delegate, "
                    + "\(checksums.asyncJobs) async/await), written as NAME.fnv1a64")
            for failure in checksums.failures { lines.append("              failed: \(failure)") }
        } else {
            lines.append("  checksums   not run (interrupted)")
        }
        lines += Self.wrap(queues.sorted(), first: "  queues      ", next: "              ")
        lines.append("  files       \(directory.path)")
        let verdict = exitStatus == 0 ? "OK" : interrupted ? "interrupted" : "FAILED"
        lines.append("  result      \(verdict) (exit status \(exitStatus))")
        return lines
    }

    /// Lists `items` after `first`, continuing on lines that start with `next` rather than going past
    /// 80 columns.
    private static func wrap(_ items: [String], first: String, next: String) -> [String] {
        var lines = [first]
        for (index, item) in items.enumerated() {
            let text = item + (index < items.count - 1 ? "," : "")
            if lines[lines.count - 1].count + text.count + 1 > 79, lines[lines.count - 1] != first {
                lines.append(next)
            }
            let last = lines[lines.count - 1]
            lines[lines.count - 1] = last + (last == first || last == next ? "" : " ") + text
        }
        return lines
    }
}
