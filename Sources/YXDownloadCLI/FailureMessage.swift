import Foundation
import YXDownload

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a failed download reads, in one line: what went wrong and what to do about it.
///
/// The terminal and plain output print `fail  FILE  MESSAGE (URL)`; `--json` puts MESSAGE in the `fail`
/// event's `error` field, next to `file`, `url` and `http_status`. The README's `yxdownload` reference
/// shows each message beside what curl and wget print for the same failure.
///
/// ```
/// fail  a.iso  cannot resolve host mirror.invalid: check the host name in the URL, and the network (http://mirror.invalid/a.iso)
/// fail  b.iso  HTTP 404 Not Found: the server has no file at this URL; check the URL (http://host/b.iso)
/// ```
package enum FailureMessage {
    /// Where the failed download ran, which decides what to do about it.
    package enum Context: Sendable {
        /// A plain run: running the same command again resumes it.
        case run
        /// A worker's job on a store that failed for good: enqueueing the entry again makes a new job (a
        /// worker's own disk faults stop the worker, which says what to do itself).
        case queue
        /// A worker's job that goes back to its store for a later attempt: nothing to do.
        case requeued

        /// How the user tries the download again; `nil` when the store does.
        var again: String? {
            switch self {
            case .run: "run the same command again"
            case .queue: "enqueue it again"
            case .requeued: nil
            }
        }

        /// `: AGAIN to WHAT` (`: run the same command again to resume`), or nothing when the store tries
        /// again itself.
        func advice(_ what: String) -> String {
            again.map { ": \($0) to \(what)" } ?? ""
        }

        /// `; RUN` or `; QUEUE` for a download that failed for good, nothing when the store tries again.
        func advice(run: String, queue: String) -> String {
            switch self {
            case .run: "; " + run
            case .queue: "; " + queue
            case .requeued: ""
            }
        }
    }

    /// The message for `error`; `file` is the download's file as the user sees it (`--dir` then the
    /// name); `retries` is `--retries` (a transient failure is reported after all of them); `context`
    /// chooses the advice (`run the same command again`, `enqueue it again` for a worker, none for a job
    /// that its store tries again).
    package static func text(for error: any Error, file: String, retries: Int, context: Context = .run) -> String {
        guard let error = error as? DownloadError else {
            if error is CancellationError { return "canceled" }
            return oneLine(String(describing: error))
        }
        let attempts = error.isTransient && retries > 0 ? " after \(retries + 1) attempts" : ""
        // The server that failed: a redirect's target when redirects led elsewhere.
        let failed = URL(string: error.failedURL ?? error.url)
        let redirected = error.failedURL == nil ? "" : " (a redirect's target)"
        let host = (failed?.host ?? "the server") + (error.kind == .couldNotResolve ? redirected : "")
        let port = (failed.map { url in url.port.map(String.init) ?? (url.scheme == "https" ? "443" : "80") } ?? "?")
            + (error.kind == .couldNotResolve ? "" : redirected)
        switch error.kind {
        case .couldNotResolve:
            return "cannot resolve host \(host): check the host name in the URL, and the network"
        case .couldNotConnect:
            if error.osErrno == ECONNREFUSED {
                return "connection refused by \(host) port \(port)\(attempts): is the server up, and the port right?"
            }
            return "cannot connect to \(host) port \(port)\(attempts) (\(oneLine(error.message))): check the host and the network"
        case .timedOut:
            if error.httpStatus == nil && error.message.lowercased().firstRange(of: "connect") != nil {
                return "no connection to \(host) port \(port) in time\(attempts): check the host and the network, "
                    + "or give --connect-timeout more seconds"
            }
            let advice = context.again.map { "; \($0) to resume, or give --timeout more seconds" } ?? ""
            return "\(oneLine(error.message))\(attempts): the server stopped sending\(advice)"
        case .connectionLost, .partialBody:
            return "the connection broke (\(oneLine(error.message)))\(attempts)\(context.advice("resume"))"
        case .tls:
            return "TLS failed (\(oneLine(error.message))): check the host name; for a server you trust, -k skips the check"
        case .httpStatus:
            return httpMessage(error, attempts: attempts, context: context)
        case .checksumMismatch:
            return "\(oneLine(error.message)); the .part was deleted: check the checksum= line, or the file on the server"
        case .lengthMismatch:
            return "\(oneLine(error.message))\(context.advice("download it anew"))"
        case .fileSystem:
            return fileSystemMessage(error, file: file, context: context)
        case .tooManyRedirects:
            return "too many redirects (\(oneLine(error.message))): the server sends the request in a loop; check the URL"
        case .unsupportedScheme:
            return "\(oneLine(error.message)): only http and https are followed, for the URL and its redirects"
        case .validatorChanged:
            return "\(oneLine(error.message))\(attempts)\(context.advice("download it from the start"))"
        case .unexpectedResponse:
            return "\(oneLine(error.message)): the server's answer cannot be used; check the URL, or try later"
        case .invalidURL, .transfer:
            return oneLine(error.message) + attempts
        }
    }

    private static func httpMessage(_ error: DownloadError, attempts: String, context: Context) -> String {
        guard let status = error.httpStatus else { return oneLine(error.message) }
        let head = "HTTP \(status)" + (reasons[status].map { " \($0)" } ?? "")
        if error.message != "HTTP \(status)" && !error.message.isEmpty {
            return oneLine(error.message)  // says more already (a Retry-After longer than a download waits)
        }
        switch status {
        case 404: return "\(head): the server has no file at this URL; check the URL"
        case 410: return "\(head): the server removed this file; check the URL"
        case 401: return "\(head): the server wants credentials (user:password@ in the URL, or -H \"Authorization: ...\")"
        case 403: return "\(head): the server refuses this file to us; check the URL and any credentials"
        case 429:
            let advice = context.advice(
                run: "try again later, or with a lower -j", queue: "enqueue it again later, or give the host a lower enqueue --per-host")
            return "\(head)\(attempts): the server limits requests\(advice)"
        case 408:
            let advice = context.advice(run: "check the network, then try again", queue: "check the network, then try again")
            return "\(head)\(attempts): the server stopped waiting for the request\(advice)"
        case 501: return "\(head): the server cannot serve this request; check the URL"
        case 200...299:
            // A success without the file (204 No Content, 205…): not a refusal (found by a review).
            return "\(head): the server answered without sending a file; check the URL"
        case 500...599:
            let later = context.advice(run: "try again later (the same command resumes what arrived)", queue: "enqueue it again later")
            return "\(head)\(attempts): the server failed\(later)"
        default: return "\(head): the server refused the request; check the URL"
        }
    }

    private static func fileSystemMessage(_ error: DownloadError, file: String, context: Context) -> String {
        // The library's message is "cannot VERB /absolute/path: reason": name the file as the user gave it.
        let part = file + ".part"
        if error.message.hasSuffix(DownloadError.foreignPartReason) {
            // Not provably ours: a user's file, or one an older yxdownload left (it marked fewer).
            return "\(part) is in the way: it holds bytes that yxdownload did not mark as its own (a file of "
                + "yours, or one left by an older version), so it is left alone; move it away or delete it"
                + (context.again.map { ", then \($0)" } ?? "")
        }
        if error.message.hasSuffix(DownloadError.partInUseReason) {
            // Another run, or a worker sharing the folder: its bytes must not mix with ours.
            return "\(part) is being written by another download of this file (another yxdownload run, or a "
                + "worker sharing the folder), so it was left alone"
                + (context.again.map { "; once that one ended, \($0)" } ?? "")
        }
        if error.message.hasSuffix(DownloadError.replacedPartReason) {
            // The file in its place is not ours: a later run leaves it alone too.
            return "\(part) was replaced by another file during the download, so it was not renamed to \(file)"
                + (context.again.map { "; move that file away, then \($0) to download it from the start" } ?? "")
        }
        let doing: String
        let target: String
        if error.message.hasPrefix("cannot create directory") {
            doing = "creating the folder of"
            target = file
        } else if error.message.hasPrefix("cannot rename") {
            doing = "renaming \(part) to"
            target = file
        } else if error.message.hasPrefix("cannot open") {
            doing = "creating"
            target = part
        } else if error.message.hasPrefix("cannot create") {
            // Naming the unnamed `.part` (see the library's commit): its final name, or `NAME.part` when
            // something already has the final name. Which one is the last component of the path.
            doing = "creating"
            let reason = error.osErrno.map { ": " + String(cString: strerror($0)) } ?? ""
            let path = error.message.hasSuffix(reason) ? error.message.dropLast(reason.count) : Substring(error.message)
            let partName = (file.split(separator: "/").last ?? "") + ".part"
            target = path.split(separator: "/").last == Substring(partName) ? part : file
        } else if error.message.hasPrefix("cannot sync") {
            doing = "flushing"
            target = part
        } else if error.message.hasPrefix("cannot read") {
            doing = "reading"
            target = part
        } else {
            doing = "writing"
            target = part
        }
        let reason = error.osErrno.map { String(cString: strerror($0)) } ?? oneLine(error.message)
        switch error.osErrno {
        case ENOSPC?, EDQUOT?:
            // A worker stops on its own disk's faults and says what to do then.
            let then = context == .run ? ", then run the same command again to resume" : ""
            return "\(reason) (\(doing) \(target)): free some space\(then)"
        case EACCES?, EPERM?:
            return "\(reason) (\(doing) \(target)): make the folder writable, or choose another --dir"
        case EROFS?:
            return "\(reason) (\(doing) \(target)): choose another --dir"
        case EISDIR? where doing.hasPrefix("renaming"):
            return "a folder is in the way of \(file): move it, or give the file another name (out= in a list)"
        case ELOOP?:
            return "\(target) is a symbolic link, which yxdownload never follows: remove it, or choose another --dir"
        case EEXIST? where doing == "creating":
            return "\(reason) (\(doing) \(target)): another program made that name meanwhile"
                + (context.again.map { "; \($0)" } ?? "")
        case ENOTDIR?, EEXIST?:
            return "\(reason) (\(doing) \(target)): a file is in the way of a folder; move it or change dir="
        default:
            return "\(reason) (\(doing) \(target))"
        }
    }

    /// The text on one line (a server's or curl's message may hold a line break).
    private static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace() }.joined(separator: " ")
    }

    private static let reasons: [Int: String] = [
        204: "No Content", 205: "Reset Content", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
        408: "Request Timeout", 410: "Gone", 416: "Range Not Satisfiable", 429: "Too Many Requests",
        500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
        504: "Gateway Timeout",
    ]
}
