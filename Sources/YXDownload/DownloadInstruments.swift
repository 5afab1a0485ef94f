import CoreMetrics
import Logging

/// A transfer engine's logs and metrics: what its downloads did, through swift-log and swift-metrics.
///
/// Metrics, each with the dimension `downloader` (the engine's name):
/// - counter `yxdownload.bytes`: body bytes received from the network and written to `.part` files;
/// - counter `yxdownload.retries`: transfers tried again after a transient failure.
///
/// Logs: each request and its response's status at trace (and, with ``logsConnectionDetails``, curl's
/// own account of connections and headers: ``CurlDiagnostics``); renames at debug; retries, resumes and
/// `Retry-After` waits at info; failed downloads at warning. Each line carries the URL (without
/// credentials) in its metadata.
final class DownloadInstruments: Sendable {
    let logger: Logger
    /// Whether transfers log curl's connection details at trace (`CURLOPT_VERBOSE`); only when the
    /// logger takes trace lines.
    let logsConnectionDetails: Bool
    /// Body bytes received (added in batches of at least ``bytesBatch``, and at the end of each transfer).
    let bytes: Counter
    let retries: Counter

    /// Bytes a transfer gathers before it adds them to ``bytes``: one metrics call per MiB, not per
    /// packet.
    static let bytesBatch: Int64 = 1 << 20

    init(name: String, logger: Logger, metricsFactory: (any MetricsFactory)?, logsConnectionDetails: Bool = false) {
        var logger = logger
        logger[metadataKey: "downloader"] = "\(name)"
        self.logger = logger
        self.logsConnectionDetails = logsConnectionDetails && logger.logLevel <= .trace
        let factory = metricsFactory ?? MetricsSystem.factory
        let dimensions = [("downloader", name)]
        bytes = Counter(label: "yxdownload.bytes", dimensions: dimensions, factory: factory)
        retries = Counter(label: "yxdownload.retries", dimensions: dimensions, factory: factory)
    }
}
