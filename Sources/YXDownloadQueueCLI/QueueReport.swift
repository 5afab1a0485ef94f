import Foundation
import YXDownloadCLI
import YXDownload
import YXJobStore
import YXTerminal

/// What `yxdownload status` shows: the downloads of a store by state with their bytes, and the ones
/// running on each worker with their progress. The table (``table()``) and the JSON (``json()``) come
/// from this one value, so they say the same.
///
/// ```
/// state       jobs  bytes done  bytes total
/// available     48           -            -
/// running        2     1.2 MiB      8.0 MiB
/// succeeded     10    40.0 MiB     40.0 MiB
/// ...
/// ```
struct QueueReport: Codable, Sendable, Equatable {
    /// One state's jobs and bytes.
    struct StateLine: Codable, Sendable, Equatable {
        var state: String
        var jobs: Int
        /// Bytes done that workers recorded: the whole file for a succeeded download, the bytes so far
        /// for a running one.
        var bytesDone: Int64
        /// The sizes the servers announced, where known.
        var bytesTotal: Int64
    }

    /// A download running on a worker, as the worker last recorded it.
    struct Running: Codable, Sendable, Equatable {
        var id: Int64
        /// The file, relative to the worker's `--dir`.
        var file: String
        var url: String
        var attempt: Int
        var bytesDone: Int64?
        var bytesTotal: Int64?
        /// Between 0 and 1, when the size is known.
        var fraction: Double?
        /// A cancel was recorded; the worker is stopping it.
        var canceling: Bool
    }

    /// One worker's running downloads.
    struct Worker: Codable, Sendable, Equatable {
        var worker: String
        var jobs: [Running]
    }

    /// A per-host limit set by `enqueue --per-host`, and how many of its downloads run now.
    struct HostLimit: Codable, Sendable, Equatable {
        /// The origin, `scheme://host:port`.
        var host: String
        var limit: Int
        var running: Int
    }

    /// Bytes over every download that recorded some.
    struct Bytes: Codable, Sendable, Equatable {
        var done: Int64
        var total: Int64
    }

    /// The store, as given (a PostgreSQL password hidden).
    var queue: String
    var takenAt: Date
    /// Every state, zero lines included, in the order of a job's life.
    var states: [StateLine]
    /// All jobs of the store.
    var total: Int
    /// Available jobs waiting for their time: a retry's back-off, or a download given back for later
    /// (another process wrote its `.part`).
    var scheduled: Int
    /// Succeeded and running downloads together.
    var bytes: Bytes
    var workers: [Worker]
    /// The per-host limits of the store's downloads, by host.
    var limits: [HostLimit]

    /// A report from a store's status and its running download jobs.
    init(queue: String, status: JobStoreStatus, running: [JobRecord]) {
        self.queue = queue
        takenAt = status.takenAt
        states = status.states.map {
            StateLine(state: $0.state.rawValue, jobs: $0.jobs, bytesDone: $0.completedUnits, bytesTotal: $0.totalUnits)
        }
        total = status.total
        scheduled = status.scheduled
        let counted = status.states.filter { $0.state == .succeeded || $0.state == .running }
        bytes = Bytes(done: counted.reduce(0) { $0 + $1.completedUnits }, total: counted.reduce(0) { $0 + $1.totalUnits })
        let downloads = Dictionary(
            running.compactMap { record in
                (try? JSONDecoder().decode(StoredDownload.self, from: record.payload)).map { (record.id, $0) }
            },
            uniquingKeysWith: { first, _ in first })
        limits = status.limits.compactMap { limit in
            guard limit.key.hasPrefix(StoredDownload.hostKeyPrefix) else { return nil }
            return HostLimit(
                host: Self.shownOrigin(String(limit.key.dropFirst(StoredDownload.hostKeyPrefix.count))), limit: limit.limit,
                running: limit.running)
        }.sorted { $0.host < $1.host }
        workers = status.workers.map { worker in
            Worker(
                worker: PrintableText.escaped(worker.worker),
                jobs: worker.jobs.map { job in
                    let download = downloads[job.id]
                    return Running(
                        id: job.id.rawValue, file: PrintableText.escaped(download?.relativePath ?? job.name),
                        url: download?.redactedURL ?? "",
                        attempt: job.attempt, bytesDone: job.progress.completedUnits, bytesTotal: job.progress.totalUnits,
                        fraction: job.progress.fraction, canceling: job.cancelRequested)
                })
        }
    }

    /// One line of JSON (snake_case keys, sorted; ISO 8601 dates).
    func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    /// The plain-text tables: states, then each worker's running downloads.
    func table() -> String {
        var lines = ["queue \(queue)", ""]
        var rows = [["state", "jobs", "bytes done", "bytes total"]]
        for line in states {
            rows.append([line.state, String(line.jobs)] + Self.byteCells(done: line.bytesDone, total: line.bytesTotal))
        }
        rows.append(["total", String(total)] + Self.byteCells(done: bytes.done, total: bytes.total))
        lines += Self.align(rows, rightAligned: [1, 2, 3])
        if scheduled > 0 {
            lines.append(
                "(\(scheduled) of the available downloads \(scheduled == 1 ? "waits for its" : "wait for their") time: a retry's "
                    + "back-off, or a download given back for later)")
        }
        lines.append("")
        if workers.isEmpty {
            lines.append("no download is running")
        } else {
            var rows = [["worker", "job", "file", "attempt", "progress", "bytes"]]
            for worker in workers {
                for job in worker.jobs {
                    let percent = job.fraction.map { String(format: "%.1f %%", $0 * 100) } ?? "-"
                    let bytes: String =
                        switch (job.bytesDone, job.bytesTotal) {
                        case (let done?, let total?): "\(ByteFormatting.bytes(done)) of \(ByteFormatting.bytes(total))"
                        case (let done?, nil): ByteFormatting.bytes(done)
                        default: "-"
                        }
                    rows.append([
                        worker.worker, String(job.id), job.canceling ? "\(job.file) (canceling)" : job.file,
                        String(job.attempt), percent, bytes,
                    ])
                }
            }
            lines += Self.align(rows, rightAligned: [1, 3, 4])
        }
        if !limits.isEmpty {
            lines.append("")
            lines += Self.align(
                [["per-host limit", "running", "limit"]] + limits.map { [$0.host, String($0.running), String($0.limit)] },
                rightAligned: [1, 2])
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func byteCells(done: Int64, total: Int64) -> [String] {
        if done == 0 && total == 0 { return ["-", "-"] }
        return [ByteFormatting.bytes(done), total > 0 ? ByteFormatting.bytes(total) : "-"]
    }

    private static func align(_ rows: [[String]], rightAligned: Set<Int>) -> [String] {
        guard let columns = rows.map(\.count).max() else { return [] }
        var widths = [Int](repeating: 0, count: columns)
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        return rows.map { row in
            var line = ""
            for (index, cell) in row.enumerated() {
                let pad = String(repeating: " ", count: widths[index] - cell.count)
                if index > 0 { line += "  " }
                line += rightAligned.contains(index) ? pad + cell : cell + pad
            }
            while line.hasSuffix(" ") { line.removeLast() }
            return line
        }
    }
}

extension QueueReport {
    /// An origin as a per-host limit's key holds it (`scheme://host:port`, the host as Foundation gives
    /// it), printable, with an IPv6 host in brackets: `http://[::1]:8080`, not `http://::1:8080`. (The
    /// key itself stays as stored: the limits of stores made before are keyed so.)
    static func shownOrigin(_ origin: String) -> String {
        let shown = PrintableText.escaped(origin)
        guard let separator = shown.range(of: "://") else { return shown }
        let authority = shown[separator.upperBound...]
        guard let portColon = authority.lastIndex(of: ":") else { return shown }
        let host = authority[..<portColon]
        guard host.contains(":"), !host.hasPrefix("[") else { return shown }
        return shown[..<separator.upperBound] + "[" + host + "]" + authority[portColon...]
    }
}
