import DequeModule
import Dispatch

/// The executor of one named queue of a ``Dispatcher``: a first-in first-out line of operations whose
/// prerequisites are done, and at most ``limit`` of them executing at once.
///
/// An operation holds its slot from the moment it is started until its completion is called; no
/// thread is held meanwhile. When it completes, the next operation in line takes its slot at once,
/// on the completing thread when that is cheap (see ``ThreadLoop``): an operation that declares
/// ``QueueOperation/executesInline`` runs right there (the next download starts on the transfer thread
/// that finished the previous one); another one runs there only if that thread is a pool thread, and
/// otherwise on a pool thread.
///
/// An operation that was canceled while in line ends as soon as its turn comes, on the thread that
/// gives it the turn (it runs none of its work).
final class WorkQueue: Sendable {
    /// The queue's name, as operations give it.
    let name: String

    fileprivate struct State {
        var limit: Int
        var running = 0
        var ready = Deque<QueueOperation>()
        var isPaused: Bool
    }

    private let state: Locked<State>
    /// The dispatcher's activity: entered for each slot taken, left when it is free. A job's end can be
    /// seen on another thread before the thread that ended it has freed its operation's slot (a job
    /// with no listener unregisters on the spot); waiting for the group waits for that too.
    private let activity: DispatchGroup

    init(name: String, limit: Int, isPaused: Bool, activity: DispatchGroup) {
        self.name = name
        self.state = Locked(State(limit: max(1, limit), isPaused: isPaused))
        self.activity = activity
    }

    /// How many operations may execute at once.
    var limit: Int { state.withLock { $0.limit } }

    /// Operations executing now, and operations waiting in line.
    var counts: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.ready.count) } }

    /// Whether the operations in line are held.
    var isPaused: Bool { state.withLock { $0.isPaused } }

    /// Changes the limit, and returns the operations that may start now: the caller gives them to
    /// ``start(_:)`` once it holds no lock. A higher limit starts waiting operations at once; a lower one
    /// lets the running ones finish and starts no new one until fewer than the limit run.
    ///
    /// The change is made under the caller's lock (the dispatcher's), so that two changes from two
    /// threads take effect in the order the dispatcher recorded them.
    func setLimit(_ limit: Int) -> [QueueOperation] {
        state.withLock { s in
            s.limit = max(1, limit)
            return s.takeStartable(entering: activity)
        }
    }

    /// Holds (or releases) the operations in line, and returns those that may start now (see
    /// ``setLimit(_:)``); executing ones go on.
    func setPaused(_ paused: Bool) -> [QueueOperation] {
        state.withLock { s in
            s.isPaused = paused
            return s.takeStartable(entering: activity)
        }
    }

    /// Starts operations that ``setLimit(_:)`` or ``setPaused(_:)`` took.
    func start(_ operations: [QueueOperation]) {
        for operation in operations { launch(operation, handedOver: false) }
    }

    /// Puts operations in line, and starts as many as the limit allows.
    ///
    /// - Parameter handedOver: whether the call comes from the completion of another operation on this
    ///   thread (its dependents became ready): an operation that can start then runs after the current
    ///   piece of work of this thread, not nested in it.
    func submit(_ operations: [QueueOperation], handedOver: Bool) {
        let start = state.withLock { s -> [QueueOperation] in
            s.ready.append(contentsOf: operations)
            return s.takeStartable(entering: activity)
        }
        for operation in start { launch(operation, handedOver: handedOver) }
    }

    /// Puts one operation in line, and starts it if the limit allows (the same as `submit([operation])`,
    /// without the arrays).
    func submit(_ operation: QueueOperation, handedOver: Bool) {
        let start = state.withLock { s -> QueueOperation? in
            s.ready.append(operation)
            return s.takeNext(entering: activity)
        }
        if let start { launch(start, handedOver: handedOver) }
    }

    /// An operation that held a slot ended: the slot goes to the next operation in line, if any.
    func slotFreed() {
        let next = state.withLock { s -> QueueOperation? in
            if !s.isPaused && s.running <= s.limit, let next = s.ready.popFirst() { return next }
            s.running -= 1
            return nil
        }
        guard let next else {
            activity.leave()
            return
        }
        launch(next, handedOver: true)  // the slot, and its place in the activity, go to `next`
    }

    private func launch(_ operation: QueueOperation, handedOver: Bool) {
        if operation.executesInline || operation.isCancelled || (handedOver && ThreadLoop.isOnPoolThread) {
            ThreadLoop.run(operation, in: self, handedOver: handedOver)
        } else {
            ThreadLoop.runOnPool(operation, in: self)
        }
    }
}

extension WorkQueue.State {
    /// The operations that may start now, each counted as running (and in `activity`).
    fileprivate mutating func takeStartable(entering activity: DispatchGroup) -> [QueueOperation] {
        var start: [QueueOperation] = []
        while let next = takeNext(entering: activity) { start.append(next) }
        return start
    }

    /// The next operation in line, counted as running (and in `activity`), if one may start now.
    fileprivate mutating func takeNext(entering activity: DispatchGroup) -> QueueOperation? {
        guard !isPaused && running < limit, let next = ready.popFirst() else { return nil }
        running += 1
        activity.enter()
        return next
    }
}
