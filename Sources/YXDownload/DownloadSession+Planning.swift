import Foundation
@_spi(YXQueueInternals) import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Planning: what the disk holds (skip, finalize a whole `.part`, resume, or start fresh), what the
/// network probe says (length, validator, ranges), the segments, and the request of each one.
extension DownloadSession {
    // MARK: - The disk

    /// Looks at the disk: skip, finalize a complete `.part`, resume, or start fresh.
    ///
    /// - Returns: whether a network probe is needed to plan segments.
    func prepare() throws(DownloadError) -> Bool {
        guard url.webScheme != nil else {
            throw DownloadError(.unsupportedScheme, "only http and https URLs are supported", url: redactedURL)
        }
        // A line break in a header or the user agent would add header lines of its own to the request:
        // whoever made the options (a job stored by an older version, a program) is refused here too.
        if options.headers.contains(where: DownloadOptions.holdsControlCharacters) || DownloadOptions.holdsControlCharacters(options.userAgent) {
            throw DownloadError(
                .transfer, "a request header or the user agent holds a control character (a line break would add "
                    + "header lines of its own): not sent", url: redactedURL)
        }
        if destinationIsFresh {
            // The maker listed the folder: nothing to look for. The `.part` starts without a name where
            // it can (see `DownloadSession+UnnamedPart.swift`); a `NAME.part` that appeared since the
            // listing is then left alone.
            if let fd = openUnnamedPart() {
                return state.withLock { s in
                    s.fd = fd
                    s.isUnnamed = true
                    return Self.planTransfer(&s, options: options)
                }
            }
            // One `open` that creates the `.part`, or finds that it appeared meanwhile (then the disk is
            // looked at as usual).
            let fd = try openPart(flags: O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, allowingExisting: true)
            if fd >= 0 {
                let mark = ResumeMark.claim(fd)
                return state.withLock { s in
                    s.fd = fd
                    s.mark = mark
                    return Self.planTransfer(&s, options: options)
                }
            }
        }
        var final = stat()
        if stat(finalPath, &final) == 0 {
            // A folder has the file's name: neither skipped as the finished file nor replaced.
            if (final.st_mode & S_IFMT) == S_IFDIR {
                throw DownloadError.fileSystem("cannot rename to", path: finalPath, errno: EISDIR, url: redactedURL)
            }
            if !options.overwrite {
                state.withLock { $0.plan = .skip }
                return false
            }
        }
        let sidecarExists = Self.exists(metaPath)
        var saved = sidecarExists && Self.exists(partPath) ? ResumeState.load(from: metaFile) : nil
        var mark: String?
        var fd = try openPart(flags: O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, allowingExisting: true)
        if fd >= 0 {
            // Ours from its creation: a later run that finds it with bytes and no resume state (this one
            // killed in its first second) may empty it. The mark that describes the download replaces this
            // one, and the rename removes it.
            mark = ResumeMark.claim(fd)
        } else {
            fd = try openPart(flags: O_RDWR | O_CREAT | O_CLOEXEC, allowingExisting: false)
        }
        var info = stat()
        fstat(fd, &info)
        let size = Int64(info.st_size)
        if size > 0 && !sidecarExists {
            // A `.part` with bytes but without a sidecar: one stream keeps its state in a mark on the file.
            // An earlier run may also have died while writing a sidecar's first version; its temporary
            // file goes (a fresh download never pays these calls).
            let found = ResumeMark.lookUp(on: fd)
            if found.isForeign {
                // Neither a sidecar nor a mark, where the file system keeps marks: not a `.part` of ours
                // (a user's `report.part`, or a finished download named so), and never emptied (found by
                // a review: it was truncated and its bytes lost).
                close(fd)
                throw DownloadError(.fileSystem, "cannot use \(partPath): \(DownloadError.foreignPartReason)", url: redactedURL)
            }
            mark = found.value
            saved = mark.flatMap { ResumeMark.state(from: $0, url: redactedURL) }
            unlink(metaPath + ".tmp")
        }

        return state.withLock { s -> Bool in
            s.fd = fd
            s.mark = mark
            s.hasSidecar = sidecarExists  // a stale one is replaced or removed too
            s.mayFindStaleTemporary = sidecarExists
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
            return Self.planTransfer(&s, options: options)
        }
    }

    /// The plan is to transfer what is missing; returns whether a network probe must come first.
    private static func planTransfer(_ s: inout State, options: DownloadOptions) -> Bool {
        s.plan = .transfer
        if s.resume.segments.count > 1 { return true }  // confirm the validator before resuming parts
        if options.connections > 1 && s.resume.doneBytes == 0 { return true }
        if s.resume.segments.isEmpty { s.resume.segments = [.init(start: 0, end: nil, done: 0)] }
        return false
    }

    /// Opens the `.part` with `flags`, creating its folder when it is missing (looked at only then: one
    /// path lookup less per file when it exists).
    ///
    /// A `.part` that is a symbolic link is never opened (`O_NOFOLLOW`, the open fails with `ELOOP`):
    /// through it, someone who can write in the output folder would have the download write, and
    /// truncate, a file anywhere the user can write.
    ///
    /// - Returns: The descriptor, or -1 when `allowingExisting` and the file exists (`O_EXCL`).
    private func openPart(flags: Int32, allowingExisting: Bool) throws(DownloadError) -> Int32 {
        let flags = flags | O_NOFOLLOW
        var fd = open(partPath, flags, 0o644)
        if fd < 0 && errno == ENOENT {
            let directory = partDirectory
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw DownloadError.fileSystem("cannot create directory", path: directory, url: redactedURL)
            }
            fd = open(partPath, flags, 0o644)
        }
        if fd < 0 && allowingExisting && errno == EEXIST { return -1 }
        guard fd >= 0 else { throw DownloadError.fileSystem("cannot open", path: partPath, url: redactedURL) }
        try lockPart(fd)
        return fd
    }

    /// Locks the `.part` just opened as `fd` for this process (``PartLock``), or closes it and throws when
    /// another process holds it, or when `NAME.part` no longer names the file that was opened: the other
    /// process renamed its finished `.part` between the open and the lock (found by a review: the file
    /// under its final name was then emptied and written again).
    func lockPart(_ fd: Int32) throws(DownloadError) {
        var code = PartLock.lock(fd)
        if code == nil && !Self.path(partPath, names: fd) { code = EAGAIN }
        guard let code else { return }
        close(fd)
        throw DownloadError(.fileSystem, "cannot use \(partPath): \(DownloadError.partInUseReason)", url: redactedURL, osErrno: code)
    }

    /// - Parameter size: the `.part`'s size when the caller just read it.
    static func startOver(_ s: inout State, fd: Int32, url: String, size: Int64? = nil) {
        // Only truncate a file that has bytes: on ext4, truncating to zero marks the file for a forced
        // flush when it is closed (its guard for "rewrite in place"), which cost 0.23 s at the close of a
        // fresh 512 MiB download.
        var info = stat()
        if size.map({ $0 > 0 }) ?? (fstat(fd, &info) != 0 || info.st_size > 0) { _ = ftruncate(fd, 0) }
        s.writebackFrom = [:]
        s.resume = ResumeState(url: url, segments: [])
        s.resumedFrom = 0
    }

    // MARK: - The probe (network, engine thread)

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
            if let error = checkLength(of: response, range: range) { return error }
            state.withLock { s in
                // The parts' own check (`isAnotherVersion`) would refuse each part of another version: a
                // change it sees (a weak tag that changed, say) is seen here, and the parts start over.
                let sameEntity =
                    s.resume.total == total && s.resume.validator != nil
                    && s.resume.validator == ResumeState(url: "", etag: response.etag, lastModified: response.lastModified, segments: []).validator
                    && !Self.isAnotherVersion(response, total: total, than: s.resume)
                if !(sameEntity && s.resume.segments.count > 1) {
                    Self.startOver(&s, fd: s.fd, url: redactedURL)
                    s.resume.etag = response.etag
                    s.resume.lastModified = response.lastModified
                    s.resume.total = total
                    // Without a validator nothing ties one part's bytes to another's version of the file:
                    // one stream, whose retries start over (found by a review: the parts' retries glued a
                    // changed file's bytes to the first version's, exit 0).
                    let hasValidator = s.resume.validator != nil
                    s.resume.segments = Self.segments(total: total, options: options, connections: hasValidator ? nil : 1)
                }
                persistLocked(&s, force: s.hasSidecar || total >= Self.earlySidecarSize)
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

    private static func segments(total: Int64, options: DownloadOptions, connections: Int? = nil) -> [ResumeState.Segment] {
        guard total > 0 else { return [.init(start: 0, end: -1, done: 0)] }
        let minimum = max(1, options.minimumSegmentSize)
        let count = Int(max(1, min(Int64(connections ?? options.connections), total / minimum)))
        // Rounded up without `total + count - 1`, which overflows for a length near Int64.max (a server
        // can announce one: found by the header fuzzer).
        let divisor = Int64(count)
        let size = total / divisor + (total % divisor == 0 ? 0 : 1)
        return (0..<count).map { index in
            let start = Int64(index) * size
            return .init(start: start, end: start + min(size, total - start) - 1, done: 0)
        }
    }

    // MARK: - Requests (engine thread)

    private func baseRequest() -> TransferRequest {
        TransferRequest(
            url: url, headers: options.headers, userAgent: options.userAgent, connectTimeout: options.connectTimeout,
            stallTimeout: options.stallTimeout, verifyTLS: options.verifyTLS)
    }

    /// The request that fetches the rest of a segment, validated with `If-Range` when resuming.
    ///
    /// One stream without a validator (the server sent neither `ETag` nor `Last-Modified`) starts over
    /// instead: a `Range` without `If-Range` would glue the rest of whatever the server holds now to the
    /// bytes of an earlier version (found by a review: a retry after a broken connection did, exit 0).
    func request(forSegment index: Int) -> TransferRequest {
        // The range is read under the lock, the request built outside it: a request captured by the lock's
        // closure was copied once more on its way out (a retain and a release of each of its strings).
        let range = state.withLock { s -> (start: Int64, end: Int64?, validator: String?)? in
            if !s.passingOver.isEmpty { s.passingOver[index] = nil }  // a new request, a new body
            let segment = s.resume.segments[index]
            let isSingle = s.resume.segments.count == 1
            if isSingle && segment.next > 0 && s.resume.validator == nil {
                Self.startOver(&s, fd: s.fd, url: redactedURL)
                s.resume.segments = [.init(start: 0, end: nil, done: 0)]
                return nil
            }
            if isSingle && segment.next == 0 { return nil }
            return (segment.next, isSingle ? nil : segment.end, s.resume.validator)
        }
        var request = baseRequest()
        if let range {
            request.rangeStart = range.start
            request.rangeEnd = range.end
            request.ifRange = range.validator
        }
        return request
    }
}
