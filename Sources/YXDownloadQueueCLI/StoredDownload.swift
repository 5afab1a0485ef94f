import Foundation
import YXDownloadCLI
import YXDownload
import YXJobStore
import YXQueue

/// One download kept in a job store (SPEC §6, "yxdownload on a store"): what `yxdownload enqueue`
/// stores, one per list entry, and what `yxdownload worker` runs. Its JSON is the stored job's payload,
/// under the stable job name ``jobName``.
///
/// The file is a path relative to the worker's `--dir`: workers that share that folder share the
/// `.part` files, so a download interrupted on one worker resumes on whichever claims it next. The path
/// is also the job's unique key (``uniqueKey``): enqueueing the same list twice joins the jobs already
/// queued instead of downloading twice.
///
/// ```
/// {"url":"https://example.com/a.iso","path":["isos","a.iso"],"checksum":"sha-256=9f86…","options":{…}}
/// ```
struct StoredDownload: Codable, Sendable, Equatable {
    /// The name the store keeps with every download job. Never rename it: stored jobs carry it.
    static let jobName = "yxdownload.download"

    /// The URL as written in the list or on the command line (credentials included: the worker needs
    /// them; they are never printed).
    var url: String
    /// The `dir=` components, then the file name: the file relative to the worker's `--dir`.
    var path: [String]
    /// `checksum=` as `ALGORITHM=HEX`, if given.
    var checksum: String?
    /// The per-download options given to `enqueue`.
    var options: StoredDownloadOptions

    /// The URL without its credentials, printable on one line, for output. A stored URL need not be one
    /// that `enqueue` checked (a store edited by hand, another program's job): credentials are also
    /// looked for where a URL without `//` keeps them (`ftp:eve:pw@host/a`).
    var redactedURL: String {
        // A URL that does not parse may hide a password with a `/` in it: hidden from its word's start.
        let text = URL(string: url).map { URLRedaction.redactingCredentials(inAuthoritiesOf: URLRedaction.redacted($0)) }
            ?? URLRedaction.redactingCredentials(in: url)
        return PrintableText.escaped(text)
    }

    /// The request the URL makes, for telling two downloads of one file apart: without credentials
    /// and fragment, scheme and host in lower case, without the scheme's default port, an empty query
    /// or `.` and `..` in the path (curl removes those before it sends the request).
    var requestIdentity: String {
        guard let standardized = URL(string: url)?.standardized,
            var parts = URLComponents(url: standardized, resolvingAgainstBaseURL: false)
        else { return url }
        parts.user = nil
        parts.password = nil
        parts.fragment = nil
        parts.scheme = parts.scheme?.lowercased()
        parts.percentEncodedHost = parts.percentEncodedHost?.lowercased()
        if let port = parts.port, (parts.scheme == "http" && port == 80) || (parts.scheme == "https" && port == 443) {
            parts.port = nil
        }
        if parts.percentEncodedQuery?.isEmpty == true { parts.percentEncodedQuery = nil }
        return parts.string ?? url
    }

    /// The user name and password in the URL, as written (never printed).
    var credentials: [String?] {
        let parts = URLComponents(string: url)
        return [parts?.percentEncodedUser, parts?.percentEncodedPassword]
    }

    /// The file relative to the worker's `--dir`, with `/` between components.
    var relativePath: String { path.joined(separator: "/") }

    /// The job's unique key among live jobs: the destination.
    var uniqueKey: String { "yxdownload:" + relativePath }

    /// The key under which the job counts against a per-host limit across the store's workers
    /// (`enqueue --per-host N` sets that limit): the URL's origin, `yxdownload:https://host:443`. A URL
    /// without a host counts under the job name.
    var concurrencyKey: String? {
        URL(string: url).flatMap(Origin.init).map { Self.hostKeyPrefix + $0.description }
    }

    /// What a per-host concurrency key starts with, before the origin.
    static let hostKeyPrefix = "yxdownload:"


    /// The retries across attempts of a stored download: an attempt whose worker died or lost its lease
    /// counts as failed, and so does one whose transient error (a server down, a timeout) outlasted the
    /// downloader's own retries within the attempt (`--retries`). Ten of those, one second doubling up to
    /// a minute, ±25 %. Other errors (a 404, a checksum mismatch) fail the job at once.
    static let storeRetryPolicy = RetryPolicy(retries: 10, initialDelay: 1, maxDelay: 60, jitter: 0.25, scope: .allErrors)

    /// The job to store.
    func request() throws -> JobRequest {
        var options = JobOptions()
        options.uniqueKey = uniqueKey
        options.concurrencyKey = concurrencyKey
        options.onDuplicate = .join
        options.retry = Self.storeRetryPolicy
        return try JobRequest(name: Self.jobName, parameters: self, options: options)
    }
}
