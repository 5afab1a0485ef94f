import ArgumentParser
import Foundation
import Logging
import YXDownload
import YXDownloadCLI
import YXJobStore
import YXTerminal

/// What `yxdownload enqueue` does once parsed: stores the jobs.
extension EnqueueCommand {
    /// Runs the command; returns the exit status.
    func execute(console: Console = .standard) -> Int32 {
        let entries: [EnqueueEntry]
        do {
            entries = try self.entries(console: console)
        } catch {
            return error.rawValue
        }
        var requests: [JobRequest] = []
        requests.reserveCapacity(entries.count)
        let options = storedOptions
        do {
            for entry in entries {
                let download = StoredDownload(url: entry.url, path: entry.path, checksum: entry.checksum, options: options)
                requests.append(try download.request())
            }
        } catch {
            console.writeErr("yxdownload: cannot encode a download job: \(error)\n")
            return ExitStatus.failure
        }
        let location = QueueLocation(text: queue)
        let quiet = quiet
        let batch = requests
        let limits = perHost.map { limit in
            Dictionary(requests.compactMap { $0.options.concurrencyKey }.map { ($0, limit) }, uniquingKeysWith: { a, _ in a })
        } ?? [:]
        return BlockingRun.run {
            await Self.store(batch, limits: limits, in: location, console: console, quiet: quiet)
        }
    }

    /// Sets the per-host limits, then stores the jobs in one transaction and says how many were new.
    private static func store(
        _ requests: [JobRequest], limits: [String: Int], in location: QueueLocation, console: Console, quiet: Bool
    ) async -> Int32 {
        let logger = Logger(label: "yxdownload.enqueue", factory: { _ in SwiftLogNoOpLogHandler() })
        guard let store = await location.open(logger: logger, console: console) else { return ExitStatus.failure }
        var status = ExitStatus.success
        do {
            // Before the jobs: a worker must never claim one of them while its host has no limit yet.
            for (key, limit) in limits.sorted(by: { $0.key < $1.key }) {
                try await store.setConcurrencyLimit(limit, forKey: key)
            }
            let results = requests.isEmpty ? [] : try await store.enqueue(requests)
            let new = results.filter(\.isNew).count
            if !quiet {
                console.writeOut(
                    "queued \(results.count) download\(results.count == 1 ? "" : "s") in \(location): "
                        + "\(new) new, \(results.count - new) already queued\n")
            }
        } catch {
            console.writeErr("yxdownload: cannot store the downloads in \(location): \(StoreErrorText.short(error)); nothing was stored.\n")
            status = ExitStatus.failure
        }
        try? await store.close()
        return status
    }
}
