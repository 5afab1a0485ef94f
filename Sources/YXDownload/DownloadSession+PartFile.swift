internal import CCurl
import Foundation
@_spi(YXQueueInternals) import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `.part` file: body bytes are written where they belong as they arrive (engine thread, gathered per
/// turn of the lane), handed to the disk's write-back in large pieces, and the file is removed when its
/// bytes are worthless.
extension DownloadSession {
    /// With `syncBeforeRename`, every this many bytes of a segment are handed to the disk as they
    /// arrive, so the flush before the rename finds little left to write. 1 MiB rather than 8: files of
    /// a few MiB then start their write-back before their end too (`scripts/bench`, 7 rounds: 100 files
    /// of 4 MiB 0.276 s instead of 0.320 s, one 512 MiB file with 8 connections 0.332 s instead of
    /// 0.371 s; `cp` + `sync` of the same bytes 0.290 and 0.364 s).
    static let writebackChunk: Int64 = 1 << 20

    /// With `syncBeforeRename`, every this many bytes of a file, its data is flushed to disk while the
    /// download goes on (`fdatasync` on ``DiskSync``'s queue for it), so that the flush before the rename
    /// waits for the last few MiB. Starting the write-back alone (``writebackChunk``) is not enough: the
    /// device keeps the bytes in its cache, and the flush's cache flush then waited for all of them. One
    /// 256 MiB file at 160 MB/s here: the final `fdatasync` took 0.39–0.49 s after the last byte; with
    /// a flush every 32 MiB, 0.05 s (a test program writing as a download does, 2026-11-28).
    static let flushAheadBytes: Int64 = 32 << 20

    /// Writes body bytes at the segment's next offset.
    ///
    /// The `pwrite` runs outside the lock: a segment is written by one transfer at a time, so its offset
    /// cannot move meanwhile, and the parts of one file, which may run on different lanes of the engine,
    /// write at the same time. `done` grows only after the bytes are written, so the sidecar never
    /// counts a byte that is not in the file.
    func write(_ received: UnsafeRawBufferPointer, segment index: Int) -> DownloadError? {
        var bytes = received
        var isLast = false
        let target = state.withLock { s -> Result<(fd: Int32, offset: Int64), DownloadError> in
            let segment = s.resume.segments[index]
            if !s.passingOver.isEmpty, let before = s.passingOver[index] {
                // The whole file for a part: what comes before the segment is passed over, and the transfer
                // stops at the segment's end.
                let skipped = Int(min(before, Int64(bytes.count)))
                s.passingOver[index] = before - Int64(skipped)
                bytes = UnsafeRawBufferPointer(rebasing: bytes[skipped...])
                if let end = segment.end, segment.next + Int64(bytes.count) - 1 >= end {
                    bytes = UnsafeRawBufferPointer(rebasing: bytes[..<Int(max(0, end - segment.next + 1))])
                    isLast = true
                }
            } else if let end = segment.end, segment.next + Int64(bytes.count) - 1 > end {
                return .failure(
                    DownloadError(.unexpectedResponse, "the server sent more bytes than asked", url: redactedURL))
            }
            return .success((s.fd, segment.next))
        }
        guard case .success(let (fd, offset)) = target else {
            if case .failure(let error) = target { return error }
            return nil
        }
        let failure = write(bytes, at: offset, fd: fd, segment: index)
        guard isLast, failure == nil else { return failure }
        // Ends the transfer; the part then succeeds, its segment being whole (`errorMeansSuccess`).
        return DownloadError(
            .transfer, "the part's range is complete; the rest of the file is not needed", url: redactedURL)
    }

    /// Writes `bytes` at `offset` of the `.part` (the segment's next byte), then counts them.
    private func write(
        _ bytes: UnsafeRawBufferPointer, at offset: Int64, fd: Int32, segment index: Int
    ) -> DownloadError? {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return nil }
        var written = 0
        while written < bytes.count {
            let result = pwrite(fd, base + written, bytes.count - written, off_t(offset + Int64(written)))
            if result < 0 {
                if errno == EINTR { continue }
                return DownloadError.fileSystem("cannot write", path: partPath, url: redactedURL)
            }
            written += result
        }
        let (writeback, flushAhead) = state.withLock { s -> ((from: Int64, length: Int64)?, Bool) in
            s.resume.segments[index].done += Int64(bytes.count)
            s.received += Int64(bytes.count)
            s.speed.add(Int64(bytes.count))
            persistLocked(&s, force: false)
            guard options.syncBeforeRename else { return (nil, false) }
            let from = s.writebackFrom[index] ?? offset
            let end = offset + Int64(bytes.count)
            s.writebackFrom[index] = end - from >= Self.writebackChunk ? end : from
            s.bytesSinceFlushAhead += Int64(bytes.count)
            let flushAhead = s.bytesSinceFlushAhead >= Self.flushAheadBytes && !s.flushingAhead
            if flushAhead {
                s.bytesSinceFlushAhead = 0
                s.flushingAhead = true
            }
            return (end - from >= Self.writebackChunk ? (from, end - from) : nil, flushAhead)
        }
        // Starts the write-back without waiting for it: the flush before the rename of a large file then
        // waits for its last few MiB, not for all of it.
        if let writeback { _ = yx_start_writeback(fd, off_t(writeback.from), off_t(writeback.length)) }
        if flushAhead { startFlushAhead(fd) }
        return nil
    }

    /// Flushes the `.part`'s data so far to disk without waiting for it (see ``flushAheadBytes``), through
    /// a descriptor of its own: the session may close `fd` meanwhile. A failure is not reported here: the
    /// flush before the rename flushes the same bytes again and reports it.
    private func startFlushAhead(_ fd: Int32) {
        let own = dup(fd)
        guard own >= 0 else {
            state.withLock { $0.flushingAhead = false }
            return
        }
        engine.diskSync.flushAhead(own) { [self] in state.withLock { $0.flushingAhead = false } }
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
            // Kept up to date once it exists, so that a crash before the rename finalizes on the next
            // run. One segment needs no write: it is written in order, so the next run takes the
            // `.part`'s size as the truth (see `plan`), and a whole file is seen whole.
            persistLocked(&s, force: s.hasSidecar && s.resume.segments.count > 1)
            return nil
        }
    }

    /// After a final failure or a cancel: a `.part` without a single byte (a 404, a refused connection,
    /// a cancel while waiting out a `Retry-After`) is not worth keeping, so it and its sidecar go.
    func removeIfEmpty() {
        let empty = state.withLock { s -> Bool in
            var info = stat()
            guard s.fd >= 0, fstat(s.fd, &info) == 0, info.st_size == 0, s.resume.doneBytes == 0 else { return false }
            s.invalidated = true  // no later sidecar write
            return !s.isUnnamed  // an unnamed one goes when it is closed
        }
        guard empty else { return }
        unlink(partPath)
        unlink(metaPath)
    }

    /// The bytes are known bad: remove the `.part` and its sidecar.
    func discard() {
        let named = state.withLock { s -> Bool in
            s.invalidated = true
            _ = ftruncate(s.fd, 0)
            return !s.isUnnamed  // an unnamed one goes when it is closed
        }
        guard named else { return }
        unlink(partPath)
        unlink(metaPath)
    }

    // MARK: - The file system

    /// Whether anything exists at `path` (one `stat`, cheaper than `FileManager` on Linux).
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }
}
