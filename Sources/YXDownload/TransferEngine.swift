import Foundation
import Synchronization

/// Runs every HTTP transfer of the process on a few threads ("lanes"), each owning one curl multi
/// handle.
///
/// Within a lane, connections (keep-alive), TLS sessions, DNS results and HTTP/2 streams are reused
/// across files: the main reason many small files download fast. No thread is blocked per transfer.
/// Transfers are dealt to the lanes in turn, so the copying of large bodies (from the socket, then to
/// the file) is spread over cores: with one thread, five 4 MiB downloads at a time were bound by that
/// one thread (about 0.33 s for 400 MiB on loopback, against 0.20 s with two). The speed limit is
/// one for all lanes: every running transfer gets the same share of it.
///
/// Use ``shared`` (what ``DownloadJob`` uses by default); create another engine only to isolate a group of
/// downloads (tests do, to count connections).
///
/// ```swift
/// TransferEngine.shared.setMaxSpeed(bytesPerSecond: 2 << 20)   // 2 MiB/s over all downloads
/// // … run downloads …
/// TransferEngine.shared.shutdown()                              // before exit()
/// ```
///
/// - Important: Call ``shutdown()`` before the process exits, so every curl handle is cleaned up on its
///   lane's thread first.
public final class TransferEngine: Sendable {
    /// The process-wide engine, started on first use, with ``defaultLaneCount`` lanes.
    public static let shared = TransferEngine()

    /// Two lanes where there are at least two cores, else one: a second lane doubles the copying
    /// bandwidth of large downloads; more lanes did not help on two cores, and each one splits the
    /// connection cache.
    public static var defaultLaneCount: Int { min(2, max(1, ProcessInfo.processInfo.activeProcessorCount)) }

    private let lanes: [TransferLane]

    /// Creates and starts an engine with its own threads and connection caches.
    ///
    /// - Parameter lanes: how many threads (each with its own curl multi handle); at least 1.
    public init(lanes: Int = TransferEngine.defaultLaneCount) {
        let transfers = EngineTransferCount()
        self.lanes = (0..<max(1, lanes)).map { TransferLane(number: $0, transfers: transfers) }
    }

    /// The number of lanes (threads) of this engine.
    public var laneCount: Int { lanes.count }

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

    /// Stops the engine: cancels every transfer, cleans up every curl handle, and waits for every lane's
    /// thread to finish. Transfers submitted afterwards complete as canceled.
    public func shutdown() {
        for lane in lanes { lane.shutdown() }
    }

    /// How many connections curl opened so far, over all lanes (for tests and benchmarks).
    public var connectionsOpened: Int { lanes.reduce(0) { $0 + $1.connectionsOpened } }
}
