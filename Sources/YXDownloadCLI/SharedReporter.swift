import YXDownload
@_spi(YXQueueInternals) import YXQueue

/// One ``RunReporter`` that jobs running at the same time report to, one call at a time: what
/// `yxdownload worker` prints through. (A plain download's reporter is called on one serial queue
/// instead; the worker's jobs end on many threads.)
///
/// It also keeps the downloads that are running, with their latest progress, for the reporters that
/// want a ``tick()`` (`--json`: progress events once a second).
package final class SharedReporter: Sendable {
    private struct State {
        var reporter: any RunReporter
        var active: [Int64: ActiveDownload] = [:]
    }

    private let state: Locked<State>

    package init(_ reporter: any RunReporter) {
        state = Locked(State(reporter: reporter))
    }

    /// How often ``tick(totals:)`` is wanted, if at all.
    package var tickInterval: Double? { state.withLock { $0.reporter.tickInterval } }

    package func started(_ id: Int64, _ item: DownloadItem) {
        state.withLock { s in
            s.active[id] = ActiveDownload(item: item, progress: DownloadProgress(bytes: 0, total: nil, bytesPerSecond: 0, bytesReceived: 0))
            s.reporter.started(item)
        }
    }

    package func progressed(_ id: Int64, _ progress: DownloadProgress) {
        state.withLock { $0.active[id]?.progress = progress }
    }

    package func finished(_ id: Int64, _ item: DownloadItem, result: DownloadResult, seconds: Double) {
        state.withLock { s in
            s.active[id] = nil
            s.reporter.finished(item, result: result, seconds: seconds)
        }
    }

    package func skipped(_ id: Int64, _ item: DownloadItem) {
        state.withLock { s in
            s.active[id] = nil
            s.reporter.skipped(item)
        }
    }

    /// A download that waits before it goes on: still running.
    package func waiting(_ id: Int64, _ item: DownloadItem, _ reason: String) {
        state.withLock { $0.reporter.waiting(item, reason) }
    }

    package func failed(_ id: Int64, _ item: DownloadItem, _ failure: DownloadFailure) {
        state.withLock { s in
            s.active[id] = nil
            s.reporter.failed(item, failure)
        }
    }

    /// A download ended without a word of its own (canceled, given back to the store).
    package func ended(_ id: Int64) {
        _ = state.withLock { $0.active.removeValue(forKey: id) }
    }

    /// Hands the running downloads to the reporter (in the order they started).
    package func tick(totals: RunTotals) {
        state.withLock { s in
            s.reporter.tick(active: s.active.sorted { $0.key < $1.key }.map(\.value), totals: totals)
        }
    }

    package func end(totals: RunTotals) {
        state.withLock { $0.reporter.end(totals: totals, stoppedBy: nil) }
    }
}
