import YXDownload
import YXQueue

/// The options of one stored download that `enqueue` takes: how it requests and verifies. The worker
/// adds its own (`-x`, the speed limit).
package struct StoredDownloadOptions: Codable, Sendable, Equatable {
    package var retries = 5
    package var retryWait: Double = 1
    package var timeout: Double = 30
    package var connectTimeout: Double = 15
    package var headers: [String] = []
    package var userAgent: String?
    package var overwrite = false
    package var insecure = false
    package var noSync = false

    /// Sets these options on a worker's download options.
    package func apply(to options: inout DownloadOptions) {
        options.retryPolicy = RetryPolicy(retries: retries, initialDelay: retryWait)
        options.headers = headers
        if let userAgent { options.userAgent = userAgent }
        options.connectTimeout = connectTimeout
        options.stallTimeout = timeout
        options.verifyTLS = !insecure
        options.overwrite = overwrite
        options.syncBeforeRename = !noSync
    }
}
