import Dispatch

/// The byte progress of one download as it changes: bytes done, the length once known, and the speed,
/// at most once per interval, ending after the download ended (with its last figures).
///
/// Get one from ``DownloadHandle/progressUpdates(every:)`` or ``DownloadJob/progressUpdates(every:)``:
///
/// ```swift
/// let handle = downloader.start(url, into: folder)
/// for await progress in handle.progressUpdates() {
///     let percent = progress.fraction.map { "\(Int($0 * 100)) %" } ?? "\(progress.bytes) bytes"
///     print(percent, Int(progress.bytesPerSecond), "bytes/s")
/// }
/// let result = try await handle.value
/// ```
///
/// Each iterator samples the download on its own (a timer on a private queue while the iteration runs)
/// and yields a snapshot only when it differs from the last one; a slow consumer gets the latest
/// snapshot, never a backlog. The sampling stops when the download ends, when the iterating task is
/// cancelled, or when the iterator is released.
public struct DownloadProgressUpdates: AsyncSequence, Sendable {
    public typealias Element = DownloadProgress

    let job: DownloadJob
    let interval: Duration

    public func makeAsyncIterator() -> Iterator {
        let sampler = DownloadProgressSampler(job: job, interval: interval)
        return Iterator(sampler: sampler, base: sampler.stream.makeAsyncIterator())
    }

    /// Iterates the snapshots; releasing it stops the sampling.
    public struct Iterator: AsyncIteratorProtocol {
        /// Owned by the iterator alone: when the iterator goes, the sampler stops.
        let sampler: DownloadProgressSampler
        var base: AsyncStream<DownloadProgress>.Iterator

        public mutating func next() async -> DownloadProgress? {
            await base.next()
        }
    }
}
