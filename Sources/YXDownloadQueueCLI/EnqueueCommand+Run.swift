import ArgumentParser
import Foundation
import Logging
import YXDownload
import YXDownloadCLI
import YXJobStore
import YXTerminal

/// What `yxdownload enqueue` does once parsed: stores the jobs.
extension EnqueueCommand {
    /// How many jobs are built and handed to the store at a time: the memory an enqueue needs follows
    /// this, not the length of the list.
    static let batchSize = 1_000

    /// Runs the command; returns the exit status.
    func execute(console: Console = .standard) -> Int32 {
        let list: EnqueueList
        do {
            list = try checkedList(console: console)
        } catch {
            return error.rawValue
        }
        // An empty list was reported as "nothing to do" by its check: no store is made for it.
        guard list.count > 0 else { return ExitStatus.success }
        let options = storedOptions
        var limits: [String: Int] = [:]
        if let perHost {
            // The hosts, in a pass of their own: a limit must be in the store before its jobs.
            var entries = list.entries()
            while let entry = entries.next() {
                let download = StoredDownload(url: entry.url, path: entry.path, checksum: entry.checksum, options: options)
                if let key = download.concurrencyKey { limits[key] = perHost }
            }
            if let failure = entries.failure {
                console.writeErr("yxdownload: \(failure); nothing was stored.\n")
                return ExitStatus.failure
            }
        }
        let reader = RequestReader(entries: list.entries(), options: options)
        // The per-host limits go in with the jobs, in their transaction: before any of them is claimable,
        // and not at all when nothing is stored.
        let batches = JobRequestBatches(concurrencyLimits: limits, checkingJoins: reader.check) { try reader.nextBatch() }
        let location = QueueLocation(text: queue)
        let quiet = quiet
        return BlockingRun.run {
            await Self.store(batches, in: location, console: console, quiet: quiet)
        }
    }

    /// Stores the jobs (and their per-host limits) in one transaction and says how many were new.
    private static func store(_ batches: JobRequestBatches, in location: QueueLocation, console: Console, quiet: Bool) async -> Int32 {
        let logger = Logger(label: "yxdownload.enqueue", factory: { _ in SwiftLogNoOpLogHandler() })
        guard let store = await location.open(logger: logger, console: console) else { return ExitStatus.failure }
        var status = ExitStatus.success
        do {
            let counts = try await store.enqueue(batches: batches)
            if !quiet {
                let total = counts.total
                console.writeOut(
                    "queued \(total) download\(total == 1 ? "" : "s") in \(location): "
                        + "\(counts.enqueued) new, \(total - counts.enqueued) already queued\n")
            }
        } catch let failure as RequestReader.Failure {
            console.writeErr("yxdownload: \(failure); nothing was stored.\n")
            status = ExitStatus.failure
        } catch let conflicts as RequestReader.Conflicts {
            console.writeErr(conflicts.report)
            status = ExitStatus.failure
        } catch {
            console.writeErr("yxdownload: cannot store the downloads in \(location): \(StoreErrorText.short(error)); nothing was stored.\n")
            status = ExitStatus.failure
        }
        try? await store.close()
        return status
    }

    /// Builds the jobs of the list's entries a batch at a time, as the store asks for them (inside its
    /// transaction, one call at a time: ``JobRequestBatches`` serializes the calls), and checks that an
    /// entry that joins a queued job asks for the same download.
    private final class RequestReader: @unchecked Sendable {
        private var entries: EnqueueList.Entries
        private let options: StoredDownloadOptions
        private var conflicts = Conflicts()

        /// Why the jobs could not all be built: the store rolls back, nothing is stored.
        struct Failure: Error, CustomStringConvertible {
            var description: String
        }

        /// Entries whose file is queued already, but from another URL or with another checksum: joined,
        /// they would never be downloaded, so the store rolls back and nothing is stored.
        struct Conflicts: Error {
            /// How many, and the first few, described.
            var count = 0
            var described: [String] = []
            static let describedAtMost = 10

            /// What the user reads: the first conflicts, then what to do.
            var report: String {
                var text = described.map { "yxdownload: \($0)\n" }.joined()
                if count > described.count { text += "yxdownload: … and \(count - described.count) more\n" }
                let entries = count == 1 ? "1 entry names a file" : "\(count) entries name files"
                text += "yxdownload: \(entries) already queued for another download; nothing was stored. "
                    + "Give \(count == 1 ? "it another name" : "them other names") with out=NAME (or dir=).\n"
                return text
            }
        }

        init(entries: EnqueueList.Entries, options: StoredDownloadOptions) {
            self.entries = entries
            self.options = options
        }

        func nextBatch() throws -> [JobRequest]? {
            var batch: [JobRequest] = []
            while batch.count < EnqueueCommand.batchSize, let entry = entries.next() {
                let download = StoredDownload(url: entry.url, path: entry.path, checksum: entry.checksum, options: options)
                do {
                    batch.append(try download.request())
                } catch {
                    throw Failure(description: "cannot encode a download job: \(error)")
                }
            }
            // A list that could not be read again to its end must not be stored in part.
            if let failure = entries.failure { throw Failure(description: failure) }
            if batch.isEmpty && conflicts.count > 0 { throw conflicts }  // every join was checked by now
            return batch.isEmpty ? nil : batch
        }

        /// Notes an entry that joined a queued download other than its own: another request (URL), other
        /// credentials, a checksum the queued job does not check, or a job this version cannot read. The
        /// same download queued again (its options may differ; a URL written otherwise, `HOST:80` for
        /// `HOST`, say) joins, as the unique key intends.
        func check(_ joined: JoinedRequest) {
            let decoder = JSONDecoder()
            guard let wanted = try? decoder.decode(StoredDownload.self, from: joined.request.payload) else { return }
            let difference: String
            if let queued = try? decoder.decode(StoredDownload.self, from: joined.existingPayload) {
                if queued.requestIdentity != wanted.requestIdentity {
                    difference = "from \(queued.redactedURL); this entry asks for \(wanted.redactedURL)"
                } else if queued.credentials != wanted.credentials {
                    difference = "from the same URL with other credentials (not shown)"
                } else if let checksum = wanted.checksum, checksum != queued.checksum {
                    difference = "with \(queued.checksum.map { "checksum \(PrintableText.escaped($0))" } ?? "no checksum"); "
                        + "this entry gives checksum \(checksum)"
                } else {
                    return
                }
            } else {
                difference = "as a job this version cannot read (a worker discards it; 'status --failed' then lists it)"
            }
            conflicts.count += 1
            guard conflicts.described.count < Conflicts.describedAtMost else { return }
            conflicts.described.append("\(wanted.relativePath) is already queued (job \(joined.existing)) \(difference)")
        }
    }
}
