import Logging
import YXQueue

/// `-v` and `-vv`: the downloader's swift-log lines on standard error, one line each, printed above the
/// progress bars when bars are shown (through the run's ``TerminalScreen``), never on standard output
/// (which may carry `--json`).
///
/// ```
/// yxdownload: [trace] request http://mirror/a.iso step=probe range=1048576-
/// yxdownload: [trace] response http://mirror/a.iso status=206 content-range="bytes 1048576-4194303/4194304"
/// yxdownload: [info] retrying http://mirror/b.iso delay=1.0 error="HTTP 503" retry="1 of 5" step=probe
/// yxdownload: [debug] renamed http://mirror/a.iso from=/data/a.iso.part to=/data/a.iso
/// ```
///
/// `-v` shows the downloader's lines from trace up (requests, responses, retries, resumes, renames);
/// `-vv` adds curl's own account of each transfer (connections made or reused, HTTP version, TLS, header
/// lines; credentials redacted by the downloader). The logger is made here and handed to the downloader:
/// no process-wide `LoggingSystem.bootstrap` is needed, so the libraries' other loggers stay silent.
///
/// A failed download is printed once, as the reporter's `fail` line: the downloader's "download failed"
/// warning is dropped here, and the dispatcher, whose "job failed" would be a third line, gets no logger.
package enum DiagnosticLog {
    /// The logger for `-v` repeated `verbosity` times (0: a logger that drops everything).
    ///
    /// - Parameter write: Writes one line (without its line feed) on standard error, above any bars.
    package static func logger(verbosity: Int, write: @escaping @Sendable (String) -> Void) -> Logger {
        guard verbosity > 0 else { return Dispatcher.silentLogger }
        var logger = Logger(label: "yxdownload", factory: { _ in Handler(write: write) })
        logger.logLevel = .trace
        return logger
    }

    /// One log line: `yxdownload: [LEVEL] MESSAGE URL key=value …` (the URL first, then the other
    /// metadata by key; values with spaces quoted; the downloader's and dispatcher's names left out).
    package static func line(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var text = "yxdownload: [\(level)] \(message)"
        if let url = metadata["url"] { text += " \(url)" }
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) where !hiddenKeys.contains(key) {
            let value = "\(value)"
            guard !value.isEmpty else { continue }
            text += " \(key)=" + (value.contains(" " as Character) ? "\"\(value)\"" : value)
        }
        return text
    }

    private static let hiddenKeys: Set<String> = ["url", "downloader", "dispatcher"]

    /// The swift-log handler: formats a record and hands it to `write`.
    struct Handler: LogHandler {
        let write: @Sendable (String) -> Void
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        var metadataProvider: Logger.MetadataProvider?

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            // The reporter prints each failure as its `fail` line, with what to do.
            if event.level == .warning && event.message.description == "download failed" { return }
            var all = metadata
            if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
            if let own = event.metadata { all.merge(own) { $1 } }
            write(DiagnosticLog.line(level: event.level, message: event.message.description, metadata: all))
        }
    }
}
