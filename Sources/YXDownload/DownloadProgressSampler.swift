import Dispatch
@_spi(YXQueueInternals) import YXQueue

/// Samples a download's byte progress for one ``DownloadProgressUpdates`` iterator: a timer on a private
/// queue reads ``DownloadJob/progressSnapshot`` and yields it when it changed; the job's terminal event
/// yields the last snapshot and finishes the stream.
///
/// Only the iterator holds the sampler (the timer, the job's observer and the stream's termination hold
/// it weakly), so releasing the iterator stops everything in `deinit`.
final class DownloadProgressSampler: Sendable {
    let stream: AsyncStream<DownloadProgress>
    private let continuation: AsyncStream<DownloadProgress>.Continuation
    private let job: DownloadJob
    /// Where sampling and the end happen, one at a time.
    private let queue = DispatchQueue(label: "yxdownload.progress-updates")

    private struct State {
        var last: DownloadProgress?
        var ended = false
        /// Dispatch sources are not `Sendable`; kept behind the lock, this one is.
        var timer: (any DispatchSourceTimer)?
        var observation: JobObservation?
    }

    private let state = Locked(State())

    init(job: DownloadJob, interval: Duration) {
        self.job = job
        (stream, continuation) = AsyncStream.makeStream(of: DownloadProgress.self, bufferingPolicy: .bufferingNewest(1))
        continuation.onTermination = { [weak self] _ in self?.stop() }
        // A job whose attempt is over gets no terminal event any more: its last figures, and the end.
        if hasEnded(job) {
            continuation.yield(job.progressSnapshot)
            stop()
            return
        }

        let observation = job.observe(.terminal) { [weak self] _, _ in
            guard let self else { return }
            queue.async { [weak self] in self?.end() }
        }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let (seconds, attoseconds) = interval.components
        let nanoseconds = max(1_000_000, Int(clamping: seconds) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000))
        timer.schedule(deadline: .now(), repeating: .nanoseconds(nanoseconds), leeway: .nanoseconds(nanoseconds / 10))
        timer.setEventHandler { [weak self] in self?.sample() }
        state.withLock { s in
            s.timer = timer
            s.observation = observation
        }
        timer.resume()
        // The job may have ended before the observer was in place.
        if hasEnded(job) {
            queue.async { [weak self] in self?.end() }
        }
    }

    private func hasEnded(_ job: DownloadJob) -> Bool {
        !job.isActive && job.state.isTerminal
    }

    deinit {
        stop()
    }

    /// Yields the current snapshot if it changed. On ``queue``.
    private func sample() {
        let snapshot = job.progressSnapshot
        let changed = state.withLock { s -> Bool in
            guard !s.ended, s.last != snapshot else { return false }
            s.last = snapshot
            return true
        }
        if changed { continuation.yield(snapshot) }
    }

    /// The download ended: the last snapshot, then the end of the stream. On ``queue``.
    private func end() {
        sample()
        stop()
    }

    /// Stops sampling and finishes the stream. Idempotent, any thread.
    private func stop() {
        let (timer, observation) = state.withLock { s -> ((any DispatchSourceTimer)?, JobObservation?) in
            s.ended = true
            defer {
                s.timer = nil
                s.observation = nil
            }
            return (s.timer, s.observation)
        }
        timer?.cancel()
        observation?.invalidate()
        continuation.finish()
    }
}
