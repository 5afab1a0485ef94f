import ArgumentParser
import YXDownload

/// The options that say how one file is fetched and kept: retries, timeouts, headers, TLS, overwrite and
/// the flush before the rename. The download (``DownloadArguments``) and `yxdownload enqueue`
/// (``EnqueueCommand``, which stores them with each job) take them as one option group, so both accept,
/// check and describe them alike.
struct RequestOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: ArgumentHelp("Retries after a transient error (per part with -x).", valueName: "N"))
    var retries = 5

    @Option(
        name: .customLong("retry-wait"),
        parsing: .unconditional,
        help: ArgumentHelp("First back-off in seconds; doubles each retry. Retry-After is honoured.", valueName: "SECONDS"))
    var retryWait: Double = 1

    @Option(parsing: .unconditional, help: ArgumentHelp("Give up an attempt when no byte arrived for this long.", valueName: "SECONDS"))
    var timeout: Double = 30

    @Option(name: .customLong("connect-timeout"), parsing: .unconditional, help: ArgumentHelp("Give up connecting after this long.", valueName: "SECONDS"))
    var connectTimeout: Double = 15

    @Option(
        name: [.customShort("H", allowingJoined: true), .customLong("header")],
        help: ArgumentHelp("Extra request header \"Name: value\"; repeatable.", valueName: "HEADER"))
    var headers: [String] = []

    @Option(
        name: [.customShort("U", allowingJoined: true), .customLong("user-agent")],
        help: ArgumentHelp("User-Agent header (default: yxdownload/\(YXDownloadVersion.string)).", valueName: "TEXT"))
    var userAgent: String?

    @Flag(help: "Replace existing files instead of skipping them.")
    var overwrite = false

    @Flag(
        name: .customLong("no-sync"),
        help: ArgumentHelp(
            "Rename finished files without waiting for the disk (faster; a power cut can then leave an empty file under a final name, as with curl or wget)."))
    var noSync = false

    @Flag(name: [.customShort("k"), .customLong("insecure")], help: "Do not check TLS certificates (only for servers you trust).")
    var insecure = false

    func validate() throws {
        guard (0...100).contains(retries) else { throw ValidationError("--retries must be between 0 and 100 (got \(retries)).") }
        guard retryWait.isFinite, (0...3600).contains(retryWait) else {
            throw ValidationError("--retry-wait must be between 0 and 3600 seconds.")
        }
        // Both finite (no NaN, no infinity) and at most a day: a day without a byte, or without a
        // connection, is no download (and `1e20` crashed the command: found by a review).
        guard timeout.isFinite, timeout > 0, timeout <= 86_400 else {
            throw ValidationError("--timeout must be more than 0 and at most 86400 seconds (got \(timeout)).")
        }
        guard connectTimeout.isFinite, connectTimeout > 0, connectTimeout <= 86_400 else {
            throw ValidationError("--connect-timeout must be more than 0 and at most 86400 seconds (got \(connectTimeout)).")
        }
        for header in headers {
            guard let colon = header.firstIndex(of: ":"), colon != header.startIndex,
                !header[..<colon].contains(where: { $0 == " " || $0 == "\t" }),
                !DownloadOptions.holdsControlCharacters(header)
            else {
                // Only the start of what was given: the rest may be a credential (a mistyped
                // "Authorization Bearer TOKEN"), which is never printed (found by a review).
                // The name only when a separator follows it: a pasted token with none would be shown whole.
                let name = header.unicodeScalars.prefix { $0 != " " && $0 != "\t" && $0 != ":" && $0.value >= 0x20 }
                let separated = name.count < header.unicodeScalars.count && (1...40).contains(name.count)
                let start = separated ? String(String.UnicodeScalarView(name)) : ""
                let got = start.isEmpty ? " (its text is not shown: it may hold a credential)"
                    : " (got one that starts \"\(PrintableText.escaped(start))\"; its value is not shown)"
                throw ValidationError("--header must look like \"Name: value\", on one line\(got).")
            }
            // The fields that make a resume or a segment: a user's value would break every download.
            let name = header[..<colon].lowercased()
            if ["range", "if-range", "content-length", "transfer-encoding"].contains(name) {
                throw ValidationError("--header cannot set \(header[..<colon]): yxdownload sets it itself (resumes, -x).")
            }
        }
        if let userAgent, DownloadOptions.holdsControlCharacters(userAgent) {
            throw ValidationError("--user-agent must be one line.")
        }
    }

    /// These options as stored with a download job (`yxdownload enqueue`), and as applied to a download:
    /// one mapping for both.
    var stored: StoredDownloadOptions {
        StoredDownloadOptions(
            retries: retries, retryWait: retryWait, timeout: timeout, connectTimeout: connectTimeout, headers: headers,
            userAgent: userAgent, overwrite: overwrite, insecure: insecure, noSync: noSync)
    }
}
