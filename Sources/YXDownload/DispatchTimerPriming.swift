import Dispatch

/// Makes libdispatch create its timer descriptors now, while descriptors are available.
///
/// On Linux, libdispatch creates a `timerfd` for a clock the first time a timer of that clock is armed,
/// and when that fails (no descriptor left: `ulimit -n` reached by sockets and `.part` files) it stops
/// the process with SIGILL. A download arms its first timer late (a retry's back-off, a progress flush),
/// when many transfers may hold every descriptor; priming at engine start avoids the crash (seen with
/// `ulimit -n 64 … -j 50 -x 4`, reproduced by a program that used every descriptor before its first
/// `asyncAfter`).
enum DispatchTimerPriming {
    /// Arms one short timer per clock (uptime and wall) on the global queues of each quality of service.
    static let primed: Void = {
        let queues: [DispatchQueue] = [
            .global(), .global(qos: .utility), .global(qos: .background), .global(qos: .userInitiated),
        ]
        for queue in queues {
            queue.asyncAfter(deadline: .now() + .milliseconds(1)) {}
            queue.asyncAfter(wallDeadline: .now() + .milliseconds(1)) {}
        }
    }()
}
