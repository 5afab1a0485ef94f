import CoreMetrics
import Foundation
import Logging
import Synchronization
import YXQueue

/// Runs HTTP transfers on a few threads ("lanes"), each owning one curl multi handle, and holds what the
/// downloads on it share: the `Retry-After` holds per host, the batched flushes to disk, the speed
/// limit, the logger and the metrics.
///
/// Within a lane, connections (keep-alive), TLS sessions, DNS results and HTTP/2 streams are reused
/// across files: the main reason many small files download fast. No thread is blocked per transfer.
/// Transfers are dealt to the lanes in turn, so the copying of large bodies (from the socket, then to
/// the file) is spread over cores: with one thread, five 4 MiB downloads at a time were bound by that
/// one thread (about 0.33 s for 400 MiB on loopback, against 0.20 s with two). A one-stream download
/// that a lane's own thread starts (a download that ended there freed the slot) stays on that lane:
/// no wake-up of another lane, no objects moving between cores. The speed limit is
/// one for all lanes: every running transfer gets the same share of it.
///
/// A lane starts its thread with its first transfer and ends it after ``idleTimeout`` without work (its
/// idle connections are closed then); the next transfer starts it again. An engine that is not
/// downloading holds no thread.
///
/// Most programs use a ``Downloader``, which owns its engine. ``DownloadJob``s made without one run on
/// ``shared``. Create an engine yourself to isolate a group of downloads (their own connections, host
/// holds and speed limit); it shuts down when it is released, or earlier with ``shutdown()``.
///
/// ```swift
/// let engine = TransferEngine(name: "backups", logger: logger)
/// engine.setMaxSpeed(bytesPerSecond: 2 << 20)   // 2 MiB/s over all its downloads
/// let job = DownloadJob(url: url, into: folder, engine: engine)
/// ```
public final class TransferEngine: Sendable {
    /// The engine of ``DownloadJob``s made without one: a documented shared default, not state you must
    /// manage. Its lanes end their threads after ``defaultIdleTimeout`` without work, so it never needs
    /// to be shut down.
    ///
    /// - Warning: Do not call ``shutdown()`` on it: that ends it for every user in the process.
    public static let shared = TransferEngine(name: "yxdownload.shared")

    /// Two lanes where there are at least two cores, else one: a second lane doubles the copying
    /// bandwidth of large downloads; more lanes did not help on two cores, and each one splits the
    /// connection cache.
    public static var defaultLaneCount: Int { min(2, max(1, ActiveProcessors.count)) }

    /// How long a lane keeps its thread (and its idle connections) without work, unless told otherwise:
    /// 10 seconds.
    public static let defaultIdleTimeout: TimeInterval = 10

    /// A name for logs and metrics.
    public let name: String
    /// How long a lane keeps its thread without work, in seconds.
    public let idleTimeout: TimeInterval

    private let lanes: [TransferLane]
    /// The `Retry-After` holds of this engine's downloads, per origin.
    let hostGate = HostGate()
    /// The flushes to disk before the renames of this engine's downloads, batched.
    let diskSync = DiskSync()
    /// Logs and metrics of this engine's downloads.
    let instruments: DownloadInstruments

    /// Creates an engine with its own lanes and connection caches. No thread starts until the first
    /// transfer.
    ///
    /// - Parameters:
    ///   - name: For logs (metadata `downloader`) and metrics (dimension `downloader`).
    ///   - lanes: How many threads (each with its own curl multi handle); at least 1.
    ///   - idleTimeout: How long a lane keeps its thread without work, in seconds.
    ///   - logger: Where the downloads log: requests at trace, retries and resumes at info, failures at
    ///     warning (default: nowhere).
    ///   - metricsFactory: Where the counters `yxdownload.bytes` and `yxdownload.retries` go (default: the
    ///     process's `MetricsSystem`).
    ///   - logsConnectionDetails: Whether to log curl's own account of each transfer at trace (connections
    ///     made or reused, HTTP version, TLS, header lines; credentials redacted), as `curl -v` prints it.
    ///     Costs time: for diagnosis (`yxdownload -vv`). Only when `logger` takes trace lines.
    public init(
        name: String = "yxdownload",
        lanes: Int = TransferEngine.defaultLaneCount,
        idleTimeout: TimeInterval = TransferEngine.defaultIdleTimeout,
        logger: Logger = Dispatcher.silentLogger,
        metricsFactory: (any MetricsFactory)? = nil,
        logsConnectionDetails: Bool = false
    ) {
        DispatchTimerPriming.primed
        self.name = name
        let instruments = DownloadInstruments(
            name: name, logger: logger, metricsFactory: metricsFactory, logsConnectionDetails: logsConnectionDetails)
        self.instruments = instruments
        let transfers = EngineTransferCount()
        let fallbacks = TrustStore.Fallbacks()
        let lanes = (0..<max(1, lanes)).map {
            TransferLane(
                number: $0, idleTimeout: idleTimeout, transfers: transfers, trustFallbacks: fallbacks,
                instruments: instruments)
        }
        self.lanes = lanes
        self.idleTimeout = lanes[0].idleTimeout
    }

    /// Shuts the engine down (see ``shutdown()``): nothing can use an engine that is being released.
    deinit {
        shutdown()
    }

    /// The number of lanes (threads at most) of this engine.
    public var laneCount: Int { lanes.count }

    /// The logger the engine's downloads log to (with the engine's name in its metadata).
    public var logger: Logger { instruments.logger }

    /// The lane ticket (see ``Transfer/laneTicket``) of a transfer about to be made.
    ///
    /// `stayingOnThisLane`: on the lane whose thread asks, as long as that lane runs no more transfers
    /// than any other lane plus one (a download that starts where the previous one ended stays on that
    /// thread and core, and the lane takes it without a wake-up); else on the lane with the fewest. A
    /// lane's thread that starts downloads for others (the list's reader, resumed where a download
    /// ended) would otherwise gather them all on its lane, and one lane would do the work of two.
    /// Otherwise, and off the lanes, transfers are dealt in turn.
    func laneTicket(stayingOnThisLane: Bool) -> Int {
        guard stayingOnThisLane, let current = TransferLane.current,
            let number = lanes.firstIndex(where: { $0 === current })
        else { return Transfer.nextTicket() }
        guard lanes.count > 1 else { return number }
        var fewest = number
        var fewestLoad = lanes[number].load.load(ordering: .relaxed)
        let own = fewestLoad
        for (index, lane) in lanes.enumerated() where index != number {
            let load = lane.load.load(ordering: .relaxed)
            if load < fewestLoad {
                fewest = index
                fewestLoad = load
            }
        }
        return own <= fewestLoad + 1 ? number : fewest
    }

    /// The lane of a transfer: fixed when the transfer was made, so a cancel finds it from any thread.
    private func lane(of transfer: Transfer) -> TransferLane {
        lanes[transfer.laneTicket % lanes.count]
    }

    /// Starts a transfer. Its handler's methods are then called on its lane's thread.
    func submit(_ transfer: Transfer) {
        lane(of: transfer).submit(transfer)
    }

    /// Cancels a transfer: it is removed from curl at once and completes with `.canceled` (unless it
    /// completed already).
    func cancel(_ transfer: Transfer) {
        lane(of: transfer).cancel(transfer)
    }

    /// Limits the total download speed of all transfers (nil: no limit).
    public func setMaxSpeed(bytesPerSecond: Int?) {
        for lane in lanes { lane.setMaxSpeed(bytesPerSecond: bytesPerSecond) }
    }

    /// Stops the engine for good: cancels every transfer (a download's `.part` stays, to resume), cleans
    /// up every curl handle, and waits until every lane's thread has ended. Transfers submitted
    /// afterwards complete as canceled. Idempotent.
    ///
    /// Called on one of the engine's own threads (from a transfer's callback), it does not wait for that
    /// thread, which ends as soon as the callback returns.
    public func shutdown() {
        for lane in lanes { lane.shutdown() }
    }

    /// How many connections curl opened so far, over all lanes (for tests and benchmarks).
    public var connectionsOpened: Int { lanes.reduce(0) { $0 + $1.connectionsOpened } }

    /// How many lanes have a thread now.
    var runningLaneThreads: Int { lanes.reduce(0) { $0 + ($1.hasThread ? 1 : 0) } }

    /// How many lane threads were started so far.
    var laneThreadStarts: Int { lanes.reduce(0) { $0 + $1.threadStarts } }

    /// Per lane: transfers added to its running thread, and how many of them another thread added.
    var transfersAddedPerLane: [(all: Int, fromElsewhere: Int)] { lanes.map(\.transfersAdded) }
}
