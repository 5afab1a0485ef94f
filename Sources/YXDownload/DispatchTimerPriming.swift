import Dispatch

/// Makes libdispatch create its timer descriptors now, while descriptors are available.
///
/// On Linux, libdispatch creates a `timerfd` for a clock the first time a timer of that clock is armed,
/// and when that fails (no descriptor left: `ulimit -n` reached by sockets and `.part` files) it stops
/// the process with SIGILL. A download arms its first timer late (a retry's back-off, a progress flush),
/// when many transfers may hold every descriptor; priming at engine start avoids the crash (seen with
/// `ulimit -n 64 … -j 50 -x 4`, reproduced by a program that used every descriptor before its first
/// `asyncAfter`).
///
/// The descriptors are per clock, not per queue: one armed timer of each clock that `DispatchTime`
/// and `DispatchWallTime` use (uptime and wall) is enough for every queue of every quality of service.
/// The two timers are due in a year and are never cancelled, so they never fire: priming starts no
/// thread. (It used to arm eight short timers, one per clock on four global queues, and each queue
/// started a worker thread to run an empty block: four threads in every run of `yxdownload`.)
enum DispatchTimerPriming {
    /// The two armed timers, kept for the life of the process.
    private final class ArmedTimers: @unchecked Sendable {
        // Set once in `init` and never changed; the sources themselves are thread-safe.
        let sources: [any DispatchSourceTimer]

        init() {
            let queue = DispatchQueue(label: "yxdownload.timer-priming")
            let dueIn = DispatchTimeInterval.seconds(365 * 24 * 3600)
            let uptime = DispatchSource.makeTimerSource(queue: queue)
            uptime.schedule(deadline: .now() + dueIn)
            let wall = DispatchSource.makeTimerSource(queue: queue)
            wall.schedule(wallDeadline: .now() + dueIn)
            sources = [uptime, wall]
            for source in sources {
                // Without a handler, libdispatch reports a client bug through syslog(3) on activation: a
                // message in the system log and a connection to /dev/log in every run.
                source.setEventHandler {}
                source.activate()
            }
        }
    }

    private static let armed = ArmedTimers()

    /// Arms one timer per clock, once per process.
    static var primed: Void { _ = armed }
}
