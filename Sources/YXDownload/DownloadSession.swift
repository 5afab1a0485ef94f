internal import CCurl
import Foundation
import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The state of one attempt of one download, shared by its operations: the `.part` file, the resume
/// sidecar, the plan, and the counters.
///
/// Methods marked "engine thread" are called from transfer callbacks (on the lane of the engine that runs
/// the transfer; the parts of one file may run on different lanes) and never block beyond a `pwrite`
/// (and, about once a second, a small atomic sidecar write).
final class DownloadSession: @unchecked Sendable {
    /// What the probe decided.
    enum Plan: Equatable {
        case undecided
        /// The file exists and overwrite is off.
        case skip
        /// The `.part` already holds the whole body.
        case finalizeOnly
        /// Transfer the unfinished segments.
        case transfer
    }

    let url: URL
    let redactedURL: String
    let finalFile: URL
    /// The three paths as strings, made once: `URL.path` and `appendingPathExtension` cost tens of
    /// thousands of instructions each on Linux.
    let finalPath: String
    let partPath: String
    let metaPath: String
    let options: DownloadOptions
    let checksum: Checksum?
    let engine: TransferEngine

    private let state: Locked<State>

    private struct State {
        var plan = Plan.undecided
        var resume: ResumeState
        var fd: Int32 = -1
        var resumedFrom: Int64 = 0
        var received: Int64 = 0
        /// When the sidecar was last written (at first: when the session began, so a download that ends
        /// within a second never writes one).
        var lastPersist = DispatchTime.now().uptimeNanoseconds
        /// Whether `NAME.part.meta` exists (loaded from an earlier run, or written by this one).
        var hasSidecar = false
        var speed = SpeedMeter()
        /// The response's validator differs from what the `.part` was made of: start over next time.
        var invalidated = false
        /// Per segment: where the bytes not yet handed to the disk's write-back begin.
        var writebackFrom: [Int: Int64] = [:]
    }

    /// With `syncBeforeRename`, every this many bytes of a segment are handed to the disk as they
    /// arrive, so the flush before the rename finds little left to write.
    static let writebackChunk: Int64 = 8 << 20

    init(url: URL, finalFile: URL, options: DownloadOptions, checksum: Checksum?, engine: TransferEngine) {
        let redacted = url.redactedString
        self.url = url
        self.redactedURL = redacted
        self.finalFile = finalFile
        self.finalPath = finalFile.path
        self.partPath = finalPath + ".part"
        self.metaPath = finalPath + ".part.meta"
        self.options = options
        self.checksum = checksum
        self.engine = engine
        state = Locked(State(resume: ResumeState(url: redacted, segments: [])))
    }

    /// `NAME.part.meta`, the resume sidecar.
    var metaFile: URL { URL(fileURLWithPath: metaPath) }

    deinit {
        let fd = state.withLock { $0.fd }
        if fd >= 0 { close(fd) }
    }

    var plan: Plan { state.withLock { $0.plan } }
    var segmentCount: Int { state.withLock { $0.resume.segments.count } }

    func isSegmentComplete(_ index: Int) -> Bool {
        state.withLock { s in index < s.resume.segments.count && s.resume.segments[index].isComplete }
    }

    /// Bytes still to fetch for a segment (nil = unknown).
    func remainingBytes(_ index: Int) -> Int64? {
        state.withLock { s in s.resume.segments[index].length.map { $0 - s.resume.segments[index].done } }
    }

    var progress: DownloadProgress {
        state.withLock { s in
            DownloadProgress(
                bytes: s.resume.doneBytes, total: s.resume.total, bytesPerSecond: s.speed.bytesPerSecond(),
                bytesReceived: s.received)
        }
    }

    // MARK: - Probe (local)

    /// Looks at the disk: skip, finalize a complete `.part`, resume, or start fresh.
    ///
    /// - Returns: whether a network probe is needed to plan segments.
    func prepare() throws(DownloadError) -> Bool {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw DownloadError(.unsupportedScheme, "only http and https URLs are supported", url: redactedURL)
        }
        if Self.exists(finalPath) && !options.overwrite {
            state.withLock { $0.plan = .skip }
            return false
        }
        let sidecarExists = Self.exists(metaPath)
        let saved = sidecarExists && Self.exists(partPath) ? ResumeState.load(from: metaFile) : nil
        var fd = open(partPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if fd < 0 && errno == ENOENT {
            // The folder is missing (checked only now: one path lookup less per file when it exists).
            // As a string: `deletingLastPathComponent()` cost 10,000 instructions per file.
            let directory = finalPath.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(finalPath[..<$0]) } ?? "."
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw DownloadError.fileSystem("cannot create directory", path: directory, url: redactedURL)
            }
            fd = open(partPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        }
        guard fd >= 0 else { throw DownloadError.fileSystem("cannot open", path: partPath, url: redactedURL) }
        var info = stat()
        fstat(fd, &info)
        let size = Int64(info.st_size)

        return state.withLock { s -> Bool in
            s.fd = fd
            s.hasSidecar = sidecarExists  // a stale one is replaced or removed too
            if var saved, saved.url == redactedURL, saved.validator != nil || saved.isComplete {
                if saved.segments.count == 1, saved.segments[0].start == 0 {
                    // One stream writes in order: the file's size is the truth (the sidecar may lag).
                    let limit = saved.segments[0].length ?? size
                    saved.segments[0].done = min(size, limit)
                } else {
                    for index in saved.segments.indices {
                        let segment = saved.segments[index]
                        saved.segments[index].done = max(0, min(segment.done, size - segment.start))
                    }
                }
                if let total = saved.total, size > total {
                    Self.startOver(&s, fd: fd, url: redactedURL, size: size)
                } else {
                    s.resume = saved
                    s.resumedFrom = saved.doneBytes
                    if saved.isComplete, let total = saved.total, size == total {
                        s.plan = .finalizeOnly
                        return false
                    }
                }
            } else {
                Self.startOver(&s, fd: fd, url: redactedURL, size: size)
            }
            s.plan = .transfer
            if s.resume.segments.count > 1 { return true }  // confirm the validator before resuming parts
            if options.connections > 1 && s.resume.doneBytes == 0 { return true }
            if s.resume.segments.isEmpty { s.resume.segments = [.init(start: 0, end: nil, done: 0)] }
            return false
        }
    }

    /// - Parameter size: the `.part`'s size when the caller just read it.
    private static func startOver(_ s: inout State, fd: Int32, url: String, size: Int64? = nil) {
        // Only truncate a file that has bytes: on ext4, truncating to zero marks the file for a forced
        // flush when it is closed (its guard for "rewrite in place"), which cost 0.23 s at the close of a
        // fresh 512 MiB download.
        var info = stat()
        if size.map({ $0 > 0 }) ?? (fstat(fd, &info) != 0 || info.st_size > 0) { _ = ftruncate(fd, 0) }
        s.writebackFrom = [:]
        s.resume = ResumeState(url: url, segments: [])
        s.resumedFrom = 0
    }

    // MARK: - Probe (network, engine thread)

    /// The request of the network probe: the first byte, to learn the length, the validator and whether
    /// ranges work.
    func probeRequest() -> TransferRequest {
        var request = baseRequest()
        request.rangeStart = 0
        request.rangeEnd = 0
        return request
    }

    /// Plans segments from the probe's response. Engine thread.
    func applyProbe(_ response: TransferResponse) -> DownloadError? {
        switch response.status {
        case 206:
            guard let range = response.contentRange, let total = range.total else {
                return DownloadError(.unexpectedResponse, "206 without a usable Content-Range", url: redactedURL, httpStatus: 206)
            }
            state.withLock { s in
                let sameEntity =
                    s.resume.total == total && s.resume.validator != nil
                    && s.resume.validator == ResumeState(url: "", etag: response.etag, lastModified: response.lastModified, segments: []).validator
                if !(sameEntity && s.resume.segments.count > 1) {
                    Self.startOver(&s, fd: s.fd, url: redactedURL)
                    s.resume.etag = response.etag
                    s.resume.lastModified = response.lastModified
                    s.resume.total = total
                    s.resume.segments = Self.segments(total: total, options: options)
                }
                persistLocked(&s, force: s.hasSidecar)
            }
            return nil
        case 416 where response.contentRange?.total == 0:
            // An empty file: nothing to fetch.
            state.withLock { s in
                Self.startOver(&s, fd: s.fd, url: redactedURL)
                s.resume.etag = response.etag
                s.resume.lastModified = response.lastModified
                s.resume.total = 0
                s.resume.segments = [.init(start: 0, end: -1, done: 0)]
            }
            return nil
        case 200:
            // Ranges not supported: one stream from zero.
            state.withLock { s in
                Self.startOver(&s, fd: s.fd, url: redactedURL)
                s.resume.segments = [.init(start: 0, end: nil, done: 0)]
            }
            return nil
        default:
            return httpError(response)
        }
    }

    private static func segments(total: Int64, options: DownloadOptions) -> [ResumeState.Segment] {
        guard total > 0 else { return [.init(start: 0, end: -1, done: 0)] }
        let minimum = max(1, options.minimumSegmentSize)
        let count = Int(max(1, min(Int64(options.connections), total / minimum)))
        let size = (total + Int64(count) - 1) / Int64(count)
        return (0..<count).map { index in
            let start = Int64(index) * size
            return .init(start: start, end: min(total, start + size) - 1, done: 0)
        }
    }

    // MARK: - Parts (engine thread)

    private func baseRequest() -> TransferRequest {
        TransferRequest(
            url: url, headers: options.headers, userAgent: options.userAgent, connectTimeout: options.connectTimeout,
            stallTimeout: options.stallTimeout, verifyTLS: options.verifyTLS)
    }

    /// The request that fetches the rest of a segment, validated with `If-Range` when resuming.
    func request(forSegment index: Int) -> TransferRequest {
        var request = baseRequest()
        state.withLock { s in
            let segment = s.resume.segments[index]
            let isSingle = s.resume.segments.count == 1
            if isSingle && segment.next == 0 { return }
            request.rangeStart = segment.next
            request.rangeEnd = isSingle ? nil : segment.end
            request.ifRange = s.resume.validator
        }
        return request
    }

    /// Checks a part's response before any byte of it is written.
    func accept(_ response: TransferResponse, segment index: Int, requested: TransferRequest) -> DownloadError? {
        state.withLock { s -> DownloadError? in
            let isSingle = s.resume.segments.count == 1
            switch (requested.rangeStart, response.status) {
            case (nil, 200):
                recordEntity(&s, response, total: response.isChunked ? nil : response.contentLength)
                return nil
            case (let start?, 206):
                guard let range = response.contentRange, range.start == start else {
                    return DownloadError(.unexpectedResponse, "the server sent another range than asked", url: redactedURL, httpStatus: 206)
                }
                if let total = range.total, let known = s.resume.total, total != known {
                    s.invalidated = true
                    return DownloadError(.validatorChanged, "the file changed on the server", url: redactedURL)
                }
                if isSingle, let total = range.total { recordEntity(&s, response, total: total) }
                return nil
            case (.some, 200):
                guard isSingle else {
                    s.invalidated = true
                    return DownloadError(.validatorChanged, "the file changed on the server", url: redactedURL)
                }
                // Range ignored or the file changed: the body is the whole file; start over.
                Self.startOver(&s, fd: s.fd, url: redactedURL)
                s.resume.segments = [.init(start: 0, end: nil, done: 0)]
                recordEntity(&s, response, total: response.isChunked ? nil : response.contentLength)
                return nil
            case (let start?, 416):
                if isSingle, let total = response.contentRange?.total, total == start {
                    // The `.part` already holds the whole body.
                    s.resume.total = total
                    s.resume.segments[0].end = total - 1
                    s.resume.segments[0].done = total
                    persistLocked(&s, force: true)
                    return DownloadError(.transfer, "already complete", url: redactedURL)
                }
                s.invalidated = true
                return httpError(response)
            default:
                return httpError(response)
            }
        }
    }

    private func recordEntity(_ s: inout State, _ response: TransferResponse, total: Int64?) {
        s.resume.etag = response.etag
        s.resume.lastModified = response.lastModified
        s.resume.total = total
        if s.resume.segments.count == 1 { s.resume.segments[0].end = total.map { $0 - 1 } }
        persistLocked(&s, force: s.hasSidecar)
    }

    private func httpError(_ response: TransferResponse) -> DownloadError {
        DownloadError(
            .httpStatus, "HTTP \(response.status)", url: redactedURL, httpStatus: response.status,
            retryAfter: response.retryAfter)
    }

    /// Writes body bytes at the segment's next offset.
    ///
    /// The `pwrite` runs outside the lock: a segment is written by one transfer at a time, so its offset
    /// cannot move meanwhile, and the parts of one file, which may run on different lanes of the engine,
    /// write at the same time. `done` grows only after the bytes are written, so the sidecar never
    /// counts a byte that is not in the file.
    func write(_ bytes: UnsafeRawBufferPointer, segment index: Int) -> DownloadError? {
        let target = state.withLock { s -> Result<(fd: Int32, offset: Int64), DownloadError> in
            let segment = s.resume.segments[index]
            if let end = segment.end, segment.next + Int64(bytes.count) - 1 > end {
                return .failure(
                    DownloadError(.unexpectedResponse, "the server sent more bytes than asked", url: redactedURL))
            }
            return .success((s.fd, segment.next))
        }
        guard case .success(let (fd, offset)) = target else {
            if case .failure(let error) = target { return error }
            return nil
        }
        var written = 0
        while written < bytes.count {
            let result = pwrite(fd, bytes.baseAddress! + written, bytes.count - written, off_t(offset + Int64(written)))
            if result < 0 {
                if errno == EINTR { continue }
                return DownloadError.fileSystem("cannot write", path: partPath, url: redactedURL)
            }
            written += result
        }
        let writeback = state.withLock { s -> (from: Int64, length: Int64)? in
            s.resume.segments[index].done += Int64(bytes.count)
            s.received += Int64(bytes.count)
            s.speed.add(Int64(bytes.count))
            persistLocked(&s, force: false)
            guard options.syncBeforeRename else { return nil }
            let from = s.writebackFrom[index] ?? offset
            let end = offset + Int64(bytes.count)
            s.writebackFrom[index] = end - from >= Self.writebackChunk ? end : from
            return end - from >= Self.writebackChunk ? (from, end - from) : nil
        }
        // Starts the write-back without waiting for it: the flush before the rename of a large file then
        // waits for its last few MiB, not for all of it.
        if let writeback { _ = yx_start_writeback(fd, off_t(writeback.from), off_t(writeback.length)) }
        return nil
    }

    /// The segment's fraction done (for operation progress).
    func fraction(ofSegment index: Int) -> Double {
        state.withLock { s in
            let segment = s.resume.segments[index]
            guard let length = segment.length else { return 0 }
            return length == 0 ? 1 : Double(segment.done) / Double(length)
        }
    }

    /// A transfer of the segment ended without error: was the segment really all there?
    func completeSegment(_ index: Int) -> DownloadError? {
        state.withLock { s -> DownloadError? in
            let segment = s.resume.segments[index]
            if let length = segment.length {
                guard segment.done == length else {
                    return DownloadError(.partialBody, "the body ended early (\(segment.done) of \(length) bytes)", url: redactedURL)
                }
            } else {
                // Unknown length (chunked): what arrived is the file.
                s.resume.segments[index].end = segment.start + segment.done - 1
                s.resume.total = segment.start + segment.done
            }
            // Kept up to date once it exists: a crash before the rename then finalizes on the next run.
            persistLocked(&s, force: s.hasSidecar)
            return nil
        }
    }

    // MARK: - Sidecar

    /// Saves the sidecar now.
    func persist() {
        state.withLock { s in persistLocked(&s, force: true) }
    }

    /// Writes the sidecar when forced, or when the last write (or the session's start) is a second old.
    ///
    /// A download that ends within its first second never writes one: creating, renaming and deleting
    /// two extra files per download was most of the cost of small files (ext4 inode work). Failures and
    /// cancels force a write, so what arrived can be resumed.
    private func persistLocked(_ s: inout State, force: Bool) {
        let now = DispatchTime.now().uptimeNanoseconds
        guard force || now - s.lastPersist > 1_000_000_000 else { return }
        s.lastPersist = now
        if s.invalidated {
            if s.hasSidecar { unlink(metaPath) }
            s.hasSidecar = false
            return
        }
        if (try? s.resume.save(to: metaFile)) != nil { s.hasSidecar = true }
    }

    // MARK: - Finalize

    /// What `verify()` found: a result to report now (a skip), or a whole `.part` waiting for its
    /// flush to disk and its rename.
    enum Verified: Sendable {
        case done(DownloadResult)
        case awaitingCommit(fd: Int32, result: DownloadResult, hasSidecar: Bool)
    }

    /// Verifies the `.part`: its length against what the server announced, its checksum against the
    /// one given. Its bytes must reach the disk (`DiskSync`) before `commit` renames it.
    func verify() throws(DownloadError) -> Verified {
        let (plan, fd, resume, resumedFrom, received, hasSidecar) = state.withLock { s in
            (s.plan, s.fd, s.resume, s.resumedFrom, s.received, s.hasSidecar)
        }
        if plan == .skip {
            var info = stat()
            let size = stat(finalPath, &info) == 0 ? Int64(info.st_size) : 0
            return .done(DownloadResult(
                outcome: .skippedExisting, url: redactedURL, file: finalFile, bytes: size, bytesReceived: 0,
                resumedFrom: 0, sha256: nil))
        }
        var info = stat()
        fstat(fd, &info)
        let size = Int64(info.st_size)
        if let total = resume.total, size != total || !resume.isComplete {
            if size > total { discard() }
            throw DownloadError(.lengthMismatch, "the file has \(size) bytes, the server announced \(total)", url: redactedURL)
        }
        var algorithms = Set<Checksum.Algorithm>()
        if let checksum { algorithms.insert(checksum.algorithm) }
        if options.computeSHA256 { algorithms.insert(.sha256) }
        var digests: [Checksum.Algorithm: String] = [:]
        if !algorithms.isEmpty {
            do {
                digests = try MultiHasher.digests(ofFileAt: partPath, algorithms: algorithms)
            } catch {
                throw DownloadError.fileSystem("cannot read", path: partPath, url: redactedURL)
            }
        }
        if let checksum, digests[checksum.algorithm] != checksum.hex {
            discard()
            throw DownloadError(
                .checksumMismatch,
                "\(checksum.algorithm.rawValue) mismatch: expected \(checksum.hex), got \(digests[checksum.algorithm] ?? "?")",
                url: redactedURL)
        }
        let result = DownloadResult(
            outcome: plan == .finalizeOnly ? .finalizedExisting : .downloaded, url: redactedURL, file: finalFile,
            bytes: size, bytesReceived: received, resumedFrom: resumedFrom, sha256: digests[.sha256])
        return .awaitingCommit(fd: fd, result: result, hasSidecar: hasSidecar)
    }

    /// Renames the verified, flushed `.part` to the final name and removes its sidecar.
    func commit(_ result: DownloadResult, hasSidecar: Bool) throws(DownloadError) -> DownloadResult {
        guard rename(partPath, finalPath) == 0 else {
            throw DownloadError.fileSystem("cannot rename to", path: finalPath, url: redactedURL)
        }
        if hasSidecar { unlink(metaPath) }
        return result
    }

    /// Whether ``finalize(_:)`` is quick enough to run on the engine thread right after the last byte: no
    /// digest to compute over the file and no flush to wait for.
    var finalizesQuickly: Bool {
        checksum == nil && !options.computeSHA256 && !options.syncBeforeRename
    }

    /// The last step of a download: ``verify()``, flush to disk when asked (batched, see `DiskSync`),
    /// ``commit(_:hasSidecar:)``. Calls `done` once, with the ``DownloadResult`` or the error.
    func finalize(_ done: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        let verified: Verified
        do {
            verified = try verify()
        } catch {
            return done(.failure(error))
        }
        guard case .awaitingCommit(let fd, let result, let hasSidecar) = verified else {
            if case .done(let result) = verified { done(.success(result)) }
            return
        }
        guard options.syncBeforeRename else {
            return done(Result { try commit(result, hasSidecar: hasSidecar) })
        }
        DiskSync.shared.sync(fd) { [self] flushed in
            guard flushed else {
                return done(.failure(DownloadError.fileSystem("cannot sync", path: partPath, url: redactedURL)))
            }
            done(Result { try commit(result, hasSidecar: hasSidecar) })
        }
    }

    /// After a final failure: a `.part` without a single byte (a 404, a refused connection) is not worth
    /// keeping, so it and its sidecar go.
    func removeIfEmpty() {
        let empty = state.withLock { s -> Bool in
            var info = stat()
            guard s.fd >= 0, fstat(s.fd, &info) == 0, info.st_size == 0, s.resume.doneBytes == 0 else { return false }
            s.invalidated = true  // no later sidecar write
            return true
        }
        guard empty else { return }
        unlink(partPath)
        unlink(metaPath)
    }

    /// The bytes are known bad: remove the `.part` and its sidecar.
    func discard() {
        state.withLock { s in
            s.invalidated = true
            _ = ftruncate(s.fd, 0)
        }
        unlink(partPath)
        unlink(metaPath)
    }

    // MARK: - File system

    /// Whether anything exists at `path` (one `stat`, cheaper than `FileManager` on Linux).
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }
}
