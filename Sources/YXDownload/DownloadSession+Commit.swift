internal import CCurl
import Foundation
@_spi(YXQueueInternals) import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The commit: a verified `.part` is flushed to disk (batched over downloads by the engine's
/// ``DiskSync``) and renamed to its final name, its resume mark or sidecar removed.
extension DownloadSession {
    /// Renames the verified, flushed `.part` (open as `fd`) to the final name; its resume mark and its
    /// sidecar go just after.
    ///
    /// An unnamed `.part` (see `DownloadSession+UnnamedPart.swift`) gets the final name directly, unless
    /// something has that name (`--overwrite`, or a file that appeared): then it is named `NAME.part` and
    /// renamed over it, as a named one is.
    func commit(_ result: DownloadResult, fd: Int32, hasSidecar: Bool, hasMark: Bool) throws(DownloadError) -> DownloadResult {
        if state.withLock({ $0.isUnnamed }) {
            // `withCString` lends the path's own bytes; passing the `String` would copy it into an array.
            if finalPath.withCString({ Self.linkUnnamed(fd, to: $0) }) == 0 {
                state.withLock { $0.isUnnamed = false }  // it has a name now: the final one, as after a rename
                logger.debug("named", metadata: ["url": "\(redactedURL)", "file": "\(finalPath)"])
                return result
            }
            guard errno == EEXIST else {
                throw DownloadError.fileSystem("cannot create", path: finalPath, url: redactedURL)
            }
            guard state.withLock({ nameUnnamedPartLocked(&$0) }) else {
                throw DownloadError.fileSystem("cannot create", path: partPath, url: redactedURL)
            }
        }
        // The rename goes by path: the `.part` must still be the file this download wrote (its descriptor's),
        // not one put in its place meanwhile by someone who can write in the folder.
        do {
            try checkPartIsStill(fd)
        } catch {
            if finalNames(fd) { return alreadyNamed(result, fd: fd, hasMark: hasMark) }
            // The sidecar describes this download's file, not the one now in its place: a later run must
            // not take that file for a finished (or half-finished) download.
            if hasSidecar { unlink(metaPath) }
            throw error
        }
        guard rename(partPath, finalPath) == 0 else {
            let code = errno
            if code == ENOENT && finalNames(fd) { return alreadyNamed(result, fd: fd, hasMark: hasMark) }
            throw DownloadError.fileSystem("cannot rename to", path: finalPath, errno: code, url: redactedURL)
        }
        // After the rename, through the descriptor: a `.part` with bytes must keep its mark, or a later run
        // would take it for someone else's and leave it (a process killed between the two calls leaves
        // the mark on the final file instead, where nothing reads it).
        if hasMark { ResumeMark.remove(from: fd) }
        logger.debug("renamed", metadata: ["url": "\(redactedURL)", "from": "\(partPath)", "to": "\(finalPath)"])
        if hasSidecar {
            unlink(metaPath)
            if state.withLock({ $0.mayFindStaleTemporary }) {
                unlink(metaPath + ".tmp")  // left by a process killed while it rewrote the sidecar
            }
        }
        return result
    }

    /// A download canceled with all its bytes: its `.part` keeps them, named and described (an unnamed
    /// one gets its name now, or it would vanish when closed), so that the next run finalizes it without
    /// a request (found by a review: the cancel check lost them).
    private func canceledBeforeTheRename(_ done: @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        persist()
        done(.failure(CancellationError()))
    }

    /// Whether the final name already names the file open as `fd`: another process that wrote the same
    /// `.part` renamed it (a worker that lost its lease while paused, then woke up and finished: found by
    /// a review, where the rightful worker then failed the job for good).
    func finalNames(_ fd: Int32) -> Bool {
        Self.path(finalPath, names: fd)
    }

    /// Whether `path` names the file open as `fd` (same device and inode; a link to it does not count).
    static func path(_ path: String, names fd: Int32) -> Bool {
        var own = stat()
        var named = stat()
        return fstat(fd, &own) == 0 && lstat(path, &named) == 0 && isSameFile(own, named)
    }

    /// The end of a commit whose file another process named: the bytes this download verified (and
    /// flushed) are the final file's, so the download is done.
    private func alreadyNamed(_ result: DownloadResult, fd: Int32, hasMark: Bool) -> DownloadResult {
        if hasMark { ResumeMark.remove(from: fd) }
        unlink(metaPath)  // the other process removed it already, or will find nothing to remove
        logger.debug("already named", metadata: ["url": "\(redactedURL)", "file": "\(finalPath)"])
        return result
    }

    /// Whether two `stat` results are of one file: the same device and inode.
    private static func isSameFile(_ a: stat, _ b: stat) -> Bool {
        a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }

    /// Throws unless `partPath` names the file open as `fd` (same device and inode, not a link to it).
    func checkPartIsStill(_ fd: Int32) throws(DownloadError) {
        var own = stat()
        var named = stat()
        guard fstat(fd, &own) == 0 else { throw DownloadError.fileSystem("cannot read", path: partPath, url: redactedURL) }
        guard lstat(partPath, &named) == 0 else {
            throw DownloadError.fileSystem("cannot rename to \(finalPath): cannot find", path: partPath, url: redactedURL)
        }
        guard Self.isSameFile(own, named) else {
            throw DownloadError(
                .fileSystem, "cannot rename \(partPath): \(DownloadError.replacedPartReason)",
                url: redactedURL)
        }
    }

    /// Whether ``finalize(_:)`` reads the whole file (to compute a digest): then it must not run on a
    /// transfer thread. Otherwise it checks the length, waits for `DiskSync` without blocking, and renames.
    var finalizeReadsTheFile: Bool {
        checksum != nil || options.computeSHA256
    }

    /// The last step of a download: ``verify()``, flush to disk when asked (batched, see `DiskSync`),
    /// ``commit(_:fd:hasSidecar:hasMark:)``. Calls `done` once, with the ``DownloadResult`` or the error.
    ///
    /// - Parameter isCanceled: Asked just before the rename: a download canceled meanwhile (a worker
    ///   whose lease was lost while it flushed, say) keeps its `.part` and does not take the final name.
    func finalize(
        isCanceled: @escaping @Sendable () -> Bool = { false },
        _ done: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void
    ) {
        let verified: Verified
        do {
            verified = try verify()
        } catch {
            return done(.failure(error))
        }
        guard case .awaitingCommit(let fd, let result, let hasSidecar, let hasMark) = verified else {
            if case .done(let result) = verified { done(.success(result)) }
            return
        }
        guard options.syncBeforeRename else {
            if isCanceled() { return canceledBeforeTheRename(done) }
            return done(Result { try commit(result, fd: fd, hasSidecar: hasSidecar, hasMark: hasMark) })
        }
        onSaving?(progress)
        engine.diskSync.sync(fd) { [self] flushed in
            guard flushed else {
                return done(.failure(DownloadError.fileSystem("cannot sync", path: partPath, url: redactedURL)))
            }
            if isCanceled() { return canceledBeforeTheRename(done) }
            done(Result { try commit(result, fd: fd, hasSidecar: hasSidecar, hasMark: hasMark) })
        }
    }
}
