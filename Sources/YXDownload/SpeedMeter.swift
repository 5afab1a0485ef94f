import Dispatch

/// Bytes per second over the last few seconds.
struct SpeedMeter: Sendable {
    private var samples: [(time: UInt64, bytes: Int64)] = []
    private var total: Int64 = 0

    mutating func add(_ count: Int64, now: UInt64 = DispatchTime.now().uptimeNanoseconds) {
        total += count
        if let last = samples.last, now - last.time < 200_000_000 { return }
        samples.append((now, total))
        if samples.count > 16 { samples.removeFirst(samples.count - 16) }
    }

    func bytesPerSecond(now: UInt64 = DispatchTime.now().uptimeNanoseconds) -> Double {
        guard let first = samples.first(where: { now - $0.time <= 3_000_000_000 }) ?? samples.last else { return 0 }
        let seconds = Double(now - first.time) / 1e9
        guard seconds > 0.05 else { return 0 }
        return Double(total - first.bytes) / seconds
    }
}
