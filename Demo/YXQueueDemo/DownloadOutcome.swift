import YXDownload

/// How one download of the demo ended: what the checksum stage works on and the summary counts.
struct DownloadOutcome: Sendable {
    /// The ways a download ends.
    enum Ending: Sendable {
        /// The file is on disk under its final name.
        case finished(DownloadResult)
        /// The job failed; the error, as text.
        case failed(String)
        /// Ctrl-C canceled it (or it never started).
        case canceled
    }

    /// The sample file.
    let file: DemoFile
    let ending: Ending
    /// From the first byte to the final rename (0 when it did not finish).
    let seconds: Double

    /// The job's result, when it finished.
    var result: DownloadResult? {
        if case .finished(let result) = ending { return result }
        return nil
    }

    /// Whether the file is on disk under its final name.
    var succeeded: Bool { result != nil }
}
