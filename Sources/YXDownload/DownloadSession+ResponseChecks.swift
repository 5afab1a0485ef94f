import Foundation
@_spi(YXQueueInternals) import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// HTTP checks: a response is judged before any byte of its body reaches the `.part` (status, range,
/// lengths, validator), so a wrong answer never spoils what was already downloaded.
extension DownloadSession {
    /// Judges a part's response before any byte of it is written.
    ///
    /// A `206` must be for the range asked (the same first byte, no byte past the last one asked) and its
    /// `Content-Length` must agree with its `Content-Range`; a `206` to a request for the whole file, or
    /// anything else unexpected, is refused. A `416` for a single stream whose `.part` already holds the
    /// whole body means there is nothing left to fetch: ``ResponseVerdict/enough``.
    func accept(_ response: TransferResponse, segment index: Int, requested: TransferRequest) -> ResponseVerdict {
        var passedOver: Int64?
        let verdict = state.withLock { s -> ResponseVerdict in
            let isSingle = s.resume.segments.count == 1
            if !s.passingOver.isEmpty { s.passingOver[index] = nil }
            switch (requested.rangeStart, response.status) {
            case (nil, 200):
                recordEntity(&s, response, total: response.isChunked ? nil : response.contentLength)
                return .proceed
            case (nil, 206):
                return .refuse(
                    DownloadError(
                        .unexpectedResponse, "the server sent part of the file (206) when the whole file was asked for",
                        url: redactedURL, httpStatus: 206))
            case (let start?, 206):
                guard let range = response.contentRange, range.start == start,
                    range.end.map({ end in requested.rangeEnd.map { end <= $0 } ?? true }) ?? false
                else {
                    let sent = response.headers.contentRange.map { "\"\($0)\"" } ?? "no Content-Range"
                    let asked = "bytes=\(start)-" + (requested.rangeEnd.map(String.init) ?? "")
                    return .refuse(
                        DownloadError(
                            .unexpectedResponse, "the server sent another range than asked (asked \(asked), got \(sent))",
                            url: redactedURL, httpStatus: 206))
                }
                if let error = checkLength(of: response, range: range) { return .refuse(error) }
                if Self.isAnotherVersion(response, total: range.total, than: s.resume) {
                    // A server that ignores `If-Range` sends the rest of a file that changed since the
                    // `.part` was written: its bytes would be glued to the old ones.
                    if isSingle {
                        // One stream: the `.part` starts over, so that the retry asks for the whole new file.
                        Self.startOver(&s, fd: s.fd, url: redactedURL)
                        s.resume.segments = [.init(start: 0, end: nil, done: 0)]
                    } else {
                        // A part: the finished parts cannot be trusted any more. The file fails and its
                        // state goes, so the next run starts over.
                        s.invalidated = true
                    }
                    return .refuse(DownloadError(.validatorChanged, "the file changed on the server", url: redactedURL))
                }
                if isSingle, let total = range.total { recordEntity(&s, response, total: total) }
                return .proceed
            case (.some, 200):
                guard isSingle else {
                    if Self.isWholeOfSameVersion(response, as: s.resume) {
                        // The server ignored the part's range (some honour ranges for some requests only):
                        // the part reads the whole body from its first byte, keeps its own range and stops
                        // after it (found by a user test: such a server failed the file in every run).
                        s.passingOver[index] = s.resume.segments[index].next
                        passedOver = s.resume.segments[index].next
                        return .proceed
                    }
                    s.invalidated = true
                    return .refuse(DownloadError(.validatorChanged, "the file changed on the server", url: redactedURL))
                }
                // Range ignored or the file changed: the body is the whole file; start over.
                Self.startOver(&s, fd: s.fd, url: redactedURL)
                s.resume.segments = [.init(start: 0, end: nil, done: 0)]
                recordEntity(&s, response, total: response.isChunked ? nil : response.contentLength)
                return .proceed
            case (let start?, 416):
                if isSingle, let total = response.contentRange?.total, total == start {
                    // The `.part` already holds the whole body.
                    s.resume.total = total
                    s.resume.segments[0].end = total - 1
                    s.resume.segments[0].done = total
                    persistLocked(&s, force: true)
                    return .enough
                }
                s.invalidated = true
                return .refuse(httpError(response))
            default:
                return .refuse(httpError(response))
            }
        }
        if let passedOver {
            // Said at -v: the part reads more than its range.
            logger.info(
                "the server sent the whole file for a part's range; reading up to the part's end",
                metadata: ["url": "\(redactedURL)", "part": "\(index)", "skipped": "\(passedOver)"])
        }
        return verdict
    }

    /// Whether a `206` to a resume is of another version of the file than the `.part` holds: another
    /// total length, or another validator than the one the resume asked with (`If-Range`), when the
    /// response names one of the same kind.
    ///
    /// Entity-tags are compared without their weakness mark (`W/"x"` and `"x"` name one version; two
    /// different tags, weak or strong, prove a change). A resume mark keeps one validator, and an
    /// unquoted `ETag` read back from it looks like a `Last-Modified` value: a stored value without a
    /// blank (every HTTP date form has some) is compared with the response's tag, not its date.
    static func isAnotherVersion(_ response: TransferResponse, total: Int64?, than resume: ResumeState) -> Bool {
        if let total, let known = resume.total, total != known { return true }
        func opaque(_ tag: String) -> Substring { tag.hasPrefix("W/") ? tag.dropFirst(2) : Substring(tag) }
        if let etag = resume.etag, let sent = response.etag {
            return opaque(sent) != opaque(etag)
        }
        if let stored = resume.lastModified {
            if stored.contains(" " as Character) {
                return response.lastModified.map { $0 != stored } ?? false
            }
            return response.etag.map { opaque($0) != Substring(stored) } ?? false
        }
        return false
    }

    /// Whether a `200` to a part's range request is the whole of the version the parts are of: its length
    /// is the file's, and its validator is the parts' own, a strong one (the one `If-Range` sent: a strong
    /// entity tag, else the date), not merely no other one (found by a review: a date-only resume took any
    /// tag for a match).
    static func isWholeOfSameVersion(_ response: TransferResponse, as resume: ResumeState) -> Bool {
        guard !response.isChunked, let length = response.contentLength, length == resume.total,
            let validator = resume.validator
        else { return false }
        return ResumeState(url: "", etag: response.etag, lastModified: response.lastModified, segments: []).validator
            == validator
    }

    /// A `206` whose `Content-Length` disagrees with its `Content-Range` frames a body that is not the
    /// range it claims to be: refused.
    func checkLength(
        of response: TransferResponse, range: (start: Int64?, end: Int64?, total: Int64?)
    ) -> DownloadError? {
        guard let length = response.contentLength, let start = range.start, let end = range.end,
            length != end - start + 1
        else { return nil }
        return DownloadError(
            .unexpectedResponse,
            "the server's Content-Length (\(length)) disagrees with its Content-Range (bytes \(start)-\(end))",
            url: redactedURL, httpStatus: response.status)
    }

    private func recordEntity(_ s: inout State, _ response: TransferResponse, total: Int64?) {
        s.resume.etag = response.etag
        s.resume.lastModified = response.lastModified
        s.resume.total = total
        if s.resume.segments.count == 1 { s.resume.segments[0].end = total.map { $0 - 1 } }
        // A large file's sidecar is written now: it must exist before the disk can fill up.
        persistLocked(&s, force: s.hasSidecar || (total ?? 0) >= Self.earlySidecarSize && s.resume.validator != nil)
    }

    func httpError(_ response: TransferResponse) -> DownloadError {
        DownloadError(
            .httpStatus, "HTTP \(response.status)", url: redactedURL, httpStatus: response.status,
            retryAfter: response.retryAfter)
    }
}
