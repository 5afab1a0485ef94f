internal import CCurl
import Dispatch
import Foundation
import Synchronization
@_spi(YXQueueInternals) import YXQueue

/// Makes finished `.part` files durable before their rename, many files per flush.
///
/// A file under its final name must be whole even after a power cut, so its bytes reach the disk
/// before the rename. One `fsync` per file costs a journal commit each: with 2,000 small files that
/// was a third of the run. Here, a finalize step that arrives while a flush is running waits for the
/// next one, and one `syncfs` (one per file system) covers every file that waited: group commit,
/// without a timer, so a lone file pays exactly one flush.
///
/// A round of one file flushes that file alone (`fdatasync`). `syncfs` writes everything dirty on the
/// file system: another program's writes, and the unfinished bytes of the downloads still running.
/// With 512 MiB just written by `dd`, a lone 8 KiB file took 0.94–0.96 s to flush with `syncfs` and
/// 1–10 ms with `fdatasync` (2026-11-27); so a download that ends alone no longer waits for the disk's
/// other work. A round of several files still takes one `syncfs`: a flush of the disk's cache for each
/// file would cost more (0.2–0.3 ms each here) than the group commit saves.
///
/// The flushing thread only flushes: what follows a flush (each file's rename, its job's end, and the
/// downloads those ends start) runs on a second serial queue, while the next round is flushed. On the
/// flushing thread, that work took longer than the flush itself (2,000 files of 8 KiB: rounds of about
/// 2 ms of `syncfs` and 3 ms of renames and job ends, one after the other), and no file could be
/// flushed meanwhile.
///
/// Each ``TransferEngine`` has one, for its downloads. Flushes and completions run on Dispatch queues,
/// whose threads go back to the pool when no flush waits.
final class DiskSync: Sendable {
    private struct Waiter {
        let fd: Int32
        let done: @Sendable (Bool) -> Void
    }

    private struct State {
        var waiting: [Waiter] = []
        var flushing = false
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "yxdownload.disksync")
    /// Where files still being written are flushed ahead of their end, one at a time.
    private let ahead = DispatchQueue(label: "yxdownload.disksync.ahead")
    /// Where waiters are called back, in the order of their rounds.
    private let completions = DispatchQueue(label: "yxdownload.disksync.done")
    /// Set on ``completions``: tells a callback where it runs (for tests).
    static let completionQueueKey = DispatchSpecificKey<Bool>()

    init() {
        completions.setSpecific(key: Self.completionQueueKey, value: true)
    }

    /// Calls `done(true)` once `fd`'s data is on disk (`done(false)` if the flush failed), on a
    /// private serial queue (not the flushing one). `fd` must stay open until then.
    func sync(_ fd: Int32, done: @escaping @Sendable (Bool) -> Void) {
        let start = state.withLock { s -> Bool in
            s.waiting.append(Waiter(fd: fd, done: done))
            if s.flushing { return false }
            s.flushing = true
            return true
        }
        if start { queue.async { self.flushRounds() } }
    }

    /// Flushes the data of `fd`, a descriptor of a file still being written, then closes `fd` and calls
    /// `done`, on a queue of its own (neither the flushing one nor the callers'). For large files: their
    /// flush before the rename then finds little left (see `DownloadSession.flushAheadBytes`).
    func flushAhead(_ fd: Int32, done: @escaping @Sendable () -> Void) {
        flushesAhead.add(1, ordering: .relaxed)
        ahead.async {
            _ = yx_sync_file_data(fd)
            close(fd)
            done()
        }
    }

    /// Flushes ahead of a file's end asked for so far (for tests).
    let flushesAhead = Atomic<Int>(0)

    /// Flushes until nobody waits; each round takes everyone who arrived during the previous one.
    private func flushRounds() {
        while true {
            let round = state.withLock { s -> [Waiter] in
                let round = s.waiting
                s.waiting = []
                if round.isEmpty { s.flushing = false }
                return round
            }
            if round.isEmpty { return }
            if round.count == 1, let lone = round.first {
                let flushed = yx_sync_file_data(lone.fd) == 0
                completions.async { DeliveryBatch.collecting { lone.done(flushed) } }
                continue
            }
            var failedDevices = Set<UInt64>()
            var flushedDevices = Set<UInt64>()
            var deviceOf: [Int32: UInt64] = [:]
            for waiter in round {
                var info = stat()
                let device = fstat(waiter.fd, &info) == 0 ? UInt64(info.st_dev) : UInt64.max
                deviceOf[waiter.fd] = device
                if device == UInt64.max {
                    failedDevices.insert(device)
                } else if !flushedDevices.contains(device) {
                    flushedDevices.insert(device)
                    if yx_syncfs(waiter.fd) != 0 { failedDevices.insert(device) }
                }
            }
            // The downloads of a round end together: their events go to their callback queue once.
            let outcomes = round.map { ($0, !failedDevices.contains(deviceOf[$0.fd] ?? UInt64.max)) }
            completions.async {
                DeliveryBatch.collecting { for (waiter, flushed) in outcomes { waiter.done(flushed) } }
            }
        }
    }
}
