import Dispatch
import DequeModule

/// A serial queue whose work runs on the thread that hands it over when the queue is idle: pass its
/// ``queue`` as jobs' callback queue, and their events reach their observers on the thread where the
/// job's operation completed, without waking another thread.
///
/// A job's callbacks normally cost a hop to the callback queue's thread: a wake-up, two context
/// switches, and caches warmed on one core read on another. That is most of what a small job costs when
/// its work is done elsewhere (a transfer engine, a socket loop) and an observer starts the next job as
/// each one ends. With a `DirectQueue`, when an operation completes and its job's events are due, the
/// completing thread takes the queue, if no one holds it, and delivers them itself; the observer that
/// starts the next job does so there too.
///
/// ```swift
/// let events = DirectQueue(label: "app.events")
/// let job = FetchJob(url: url, callbackQueue: events.queue)
/// let token = job.onFinish { job, result in startNext() }   // runs where the fetch ended
/// dispatcher.add(job)
/// ```
///
/// What holds, as for any serial queue: work runs one item at a time, in the order handed over, and
/// every item runs "on" ``queue``: `dispatchPrecondition(condition: .onQueue(events.queue))` holds in
/// it, and it never overlaps a block given to `queue` directly. A thread that finds the queue held (by
/// another thread's item) leaves its work in line and returns at once: the holder runs it next. A
/// thread delivers at most a few dozen items in a row; the rest go on on the queue's own thread.
///
/// - Important: Items run on threads the queue does not own (transfer threads, pool threads): keep
///   them short and never wait in them for work that those threads do. Hand everything to the queue
///   through ``async(_:)`` rather than `queue.async`: a thread that finds the queue idle in this
///   object's eyes enters it with `queue.sync`, which waits while a block given to `queue` directly
///   runs.
public final class DirectQueue: Sendable {
    /// The serial dispatch queue that this object runs its items on (inline or on its own thread).
    /// Use it as jobs' ``Job/callbackQueue``.
    public let queue: DispatchQueue

    private struct State {
        /// Some thread is running items (on the queue, or inside `queue.sync`).
        var isHeld = false
        var waiting = Deque<@Sendable () -> Void>()
    }

    private let state = Locked(State())

    /// Items one thread runs in a row before it lets the queue's own thread go on with the rest.
    static let runBudget = 64

    /// Finds the `DirectQueue` of a dispatch queue: stored on the queue itself, so that anything that
    /// takes a `DispatchQueue` (a job's callback queue) can be given one.
    private static let key = DispatchSpecificKey<Reference>()

    /// What the dispatch queue keeps: a weak reference, so the queue does not keep this object alive.
    private final class Reference: Sendable {
        weak let owner: DirectQueue?
        init(_ owner: DirectQueue) { self.owner = owner }
    }

    /// Creates a queue on a new serial dispatch queue.
    ///
    /// - Parameters:
    ///   - label: The dispatch queue's label (shown by debuggers and in crash reports).
    ///   - qos: The dispatch queue's quality of service.
    public init(label: String, qos: DispatchQoS = .unspecified) {
        queue = DispatchQueue(label: label, qos: qos)
        queue.setSpecific(key: Self.key, value: Reference(self))
    }

    /// The `DirectQueue` whose ``queue`` this is, if any.
    static func owning(_ queue: DispatchQueue) -> DirectQueue? {
        queue.getSpecific(key: key)?.owner
    }

    /// Hands `work` to a callback queue: through its `DirectQueue` if it has one (with `mayRunHere`,
    /// ``run(_:)``; otherwise ``async(_:)``), else with the dispatch queue's own `async`.
    static func hand(_ work: @escaping @Sendable () -> Void, to queue: DispatchQueue, mayRunHere: Bool) {
        guard let direct = owning(queue) else { return queue.async(execute: work) }
        if mayRunHere { direct.run(work) } else { direct.async(work) }
    }

    /// Whether some thread runs this queue's items now (for tests).
    var isHeld: Bool { state.withLock { $0.isHeld } }

    /// Whether the calling thread is running an item of this queue, or a block of ``queue``.
    public var isCurrent: Bool {
        DispatchQueue.getSpecific(key: Self.key)?.owner === self
    }

    /// Runs `work` now on this thread when the queue is idle, and otherwise after the items ahead of it,
    /// on the thread that holds the queue.
    ///
    /// - Important: Called from inside one of this queue's items, `work` waits for that item to return
    ///   (it never nests).
    public func run(_ work: @escaping @Sendable () -> Void) {
        guard take(work) else { return }
        if isCurrent {
            // A block given to `queue` directly holds it already; `queue.sync` here would deadlock.
            runItems(first: work, inline: true)
        } else {
            queue.sync { runItems(first: work, inline: true) }
        }
    }

    /// Runs `work` on the queue's own thread, after the items ahead of it; returns at once.
    public func async(_ work: @escaping @Sendable () -> Void) {
        guard take(work) else { return }
        queue.async { self.runItems(first: work, inline: false) }
    }

    /// Puts `work` in line when the queue is held; otherwise takes the queue for the caller and returns
    /// true (the caller then runs `work` and what comes after it).
    private func take(_ work: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { s in
            if s.isHeld {
                s.waiting.append(work)
                return false
            }
            s.isHeld = true
            return true
        }
    }

    /// Runs `first`, then what waits, until nothing does; inline, at most ``runBudget`` items, after
    /// which the queue's own thread takes over.
    private func runItems(first: @escaping @Sendable () -> Void, inline: Bool) {
        var work: (@Sendable () -> Void)? = first
        var ran = 0
        while let item = work {
            item()
            ran += 1
            let passOn = inline && ran >= Self.runBudget
            work = state.withLock { s in
                guard let next = s.waiting.popFirst() else {
                    s.isHeld = false
                    return nil
                }
                return next
            }
            if passOn, let next = work {
                // Still held: the queue's thread goes on where this one stops.
                queue.async { self.runItems(first: next, inline: false) }
                return
            }
        }
    }
}
