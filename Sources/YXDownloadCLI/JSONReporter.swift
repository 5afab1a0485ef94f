import YXDownload
import YXTerminal

/// `--json`: standard output carries only JSON lines, one per event (SPEC §4); the human summary still
/// goes to standard error.
///
/// Progress events come once a second for each running download whose byte count moved.
package final class JSONReporter: RunReporter {
    private let console: Console
    private var lastReported: [String: Int64] = [:]

    package init(console: Console) {
        self.console = console
    }

    package var tickInterval: Double? { 1 }

    private func emit(_ line: JSONLine) {
        console.writeOut(line.text + "\n")
    }

    package func started(_ item: DownloadItem) {
        emit(JSONLine(["event": .string("start"), "url": .string(item.url), "file": .string(item.file)]))
    }

    package func finished(_ item: DownloadItem, result: DownloadResult, seconds: Double) {
        lastReported[item.file] = nil
        emit(JSONLine([
            "event": .string("finish"), "url": .string(item.url), "file": .string(item.file),
            "bytes": .int(result.bytes), "sha256": result.sha256.map(JSONLine.Value.string) ?? .null,
        ]))
    }

    package func skipped(_ item: DownloadItem) {
        emit(JSONLine([
            "event": .string("skip"), "url": .string(item.url), "file": .string(item.file), "reason": .string("exists"),
        ]))
    }

    package func waiting(_ item: DownloadItem, _ reason: String) {
        emit(JSONLine(["event": .string("wait"), "url": .string(item.url), "file": .string(item.file), "reason": .string(reason)]))
    }

    package func failed(_ item: DownloadItem, _ failure: DownloadFailure) {
        lastReported[item.file] = nil
        emit(JSONLine([
            "event": .string(failure.isFinal ? "fail" : "requeue"), "url": .string(item.url), "file": .string(item.file),
            "error": .string(failure.message), "http_status": failure.httpStatus.map { .int(Int64($0)) } ?? .null,
        ]))
    }

    package func tick(active: [ActiveDownload], totals: RunTotals) {
        for download in active where lastReported[download.item.file] != download.progress.bytes {
            lastReported[download.item.file] = download.progress.bytes
            emit(JSONLine([
                "event": .string("progress"), "url": .string(download.item.url), "file": .string(download.item.file),
                "bytes": .int(download.progress.bytes), "total": download.progress.total.map { .int($0) } ?? .null,
            ]))
        }
    }

    package func end(totals: RunTotals, stoppedBy stop: RunStop?) {
        var fields: [(key: String, value: JSONLine.Value)] = [
            ("event", .string("summary")), ("done", .int(Int64(totals.done))), ("skipped", .int(Int64(totals.skipped))),
            ("failed", .int(Int64(totals.failed))), ("bytes", .int(totals.bytes)), ("seconds", .seconds(totals.seconds)),
        ]
        // A run that ended early says why, and what it left: a script must not read it as complete.
        switch stop {
        case .signal(let name): fields.append(("interrupted", .string(name)))
        case .listChanged(let how): fields.append(("error", .string(how)))
        case nil: break
        }
        if stop != nil {
            fields.append(("canceled", .int(Int64(totals.canceled))))
            fields.append(("not_started", .int(Int64(totals.notStarted))))
        }
        emit(JSONLine(fields))
        console.writeErr(summaryLine(totals, stoppedBy: stop))
    }
}
