
/// Swift concurrency: run a job with `await`, wait for its outcome, iterate its events.
extension Job {
    /// Starts the job on `dispatcher` and waits for the end of the attempt.
    ///
    /// Cancelling the calling task cancels the job.
    ///
    /// ```swift
    /// let result = try await HashJob(path: "/tmp/big.iso").run()
    /// ```
    ///
    /// - Returns: The job's result.
    /// - Throws: The job's error, or `CancellationError` when it was canceled or dropped.
    @discardableResult
    public func run(on dispatcher: Dispatcher = .shared) async throws -> (any Sendable)? {
        try await withTaskCancellationHandler {
            // A task cancelled before this call ran its cancellation handler before the body, when the
            // job was not active yet and `cancel()` did nothing: the attempt begins canceled, and none
            // of its work runs. A cancel between this check and `start` is caught just after it.
            start(on: dispatcher, canceled: Task.isCancelled)
            if Task.isCancelled { cancel() }
            // Not `value`: cancelling this task cancels the job, and the caller hears how the job ended.
            return try await outcome(endingWaitOnTaskCancellation: false).get()
        } onCancel: {
            cancel()
        }
    }

    /// The outcome of the current attempt, waiting for it to end. For a job that is not active: the
    /// outcome of its last attempt, or, for a job never started, of its first attempt.
    ///
    /// Cancelling the awaiting task ends the wait (with `CancellationError`); the job itself goes on.
    /// A job dropped before its next attempt began ends the wait too.
    ///
    /// - Throws: The job's error, or `CancellationError` when it was canceled or dropped or the awaiting
    ///   task was cancelled.
    public var value: (any Sendable)? {
        get async throws {
            try await outcome(endingWaitOnTaskCancellation: true).get()
        }
    }

    private typealias Outcome = Result<(any Sendable)?, any Error>

    /// Waits for the end of the current (or next) attempt.
    ///
    /// - Parameter endingWaitOnTaskCancellation: whether cancelling the awaiting task ends the wait at
    ///   once with `CancellationError` (`value`), or the wait goes on until the job ends (`run`, which
    ///   cancels the job itself).
    private func outcome(endingWaitOnTaskCancellation: Bool) async -> Outcome {
        /// The continuation, and the observer to remove once it was resumed.
        struct Waiter {
            var continuation: CheckedContinuation<Outcome, Never>?
            var observer: UInt64?
            var canceledEarly = false
        }
        let waiter = Locked(Waiter())
        // The job's state, not the job: no weak reference (see `observerRemoval`). The observer holds
        // `resume` until it is called, which removes the observer.
        let resume: @Sendable (Outcome) -> Void = { [core] outcome in
            let (continuation, observer) = waiter.withLock { w in
                defer { w.continuation = nil; w.observer = nil }
                return (w.continuation, w.observer)
            }
            if let observer { Job.removeObserver(observer, from: core) }
            continuation?.resume(returning: outcome)
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let early = waiter.withLock { w -> Bool in
                    w.continuation = continuation
                    return w.canceledEarly
                }
                if early { return resume(.failure(CancellationError())) }
                let immediate: Outcome? = core.withLock { s in
                    switch (s.isActive, s.state) {
                    case (false, .finished): return .success(s.result)
                    case (false, .failed): return .failure(s.error ?? CancellationError())
                    case (false, .canceled), (false, .dropped): return .failure(CancellationError())
                    default: break
                    }
                    let id = s.addObserver(attempt: s.currentOrNextAttempt, kinds: .terminal) { _, event in
                        switch event {
                        case .finished(let value): resume(.success(value))
                        case .failed(let error): resume(.failure(error))
                        case .canceled: resume(.failure(CancellationError()))
                        case .started, .progress, .retrying: return
                        }
                    }
                    waiter.withLock { $0.observer = id }
                    return nil
                }
                if let immediate { resume(immediate) }
            }
        } onCancel: {
            guard endingWaitOnTaskCancellation else { return }
            let registered = waiter.withLock { w -> Bool in
                w.canceledEarly = true
                return w.continuation != nil
            }
            if registered { resume(.failure(CancellationError())) }
        }
    }

    /// The events of the current attempt (or, when none is active, of the next one), ending after its
    /// terminal event. Ending the iteration early unregisters the stream.
    ///
    /// ```swift
    /// let events = job.events
    /// job.start()
    /// for await event in events { print(event) }
    /// ```
    public var events: AsyncStream<JobEvent> {
        eventStream { $0 }
    }

    /// The events of the current (or next) attempt, each transformed, as a stream that ends after the
    /// terminal event.
    /// - Parameter endedAttempt: whether a stream made when no attempt is active but one has ended
    ///   holds that attempt's terminal event alone (a handle's events, asked for after `start`, by
    ///   which time a short job may have ended), rather than following the next attempt.
    func eventStream<Element: Sendable>(
        endedAttempt: Bool = false, _ transform: @escaping @Sendable (JobEvent) -> Element
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .unbounded)
        let subscription: EventSubscription = core.withLock { s in
            if endedAttempt, !s.isActive, s.attempt > 0 {
                switch s.state {
                case .finished: return .ended(.finished(s.result))
                case .failed: return .ended(.failed(s.error ?? CancellationError()))
                case .canceled, .dropped: return .ended(.canceled)
                default: break
                }
            }
            // A dropped job has no next attempt: its stream is empty.
            guard s.isActive || s.state != .dropped else { return .ended(nil) }
            return .observer(
                s.addObserver(attempt: s.currentOrNextAttempt) { _, event in
                    continuation.yield(transform(event))
                    if event.isTerminal { continuation.finish() }
                })
        }
        guard case .observer(let id) = subscription else {
            if case .ended(let event?) = subscription { continuation.yield(transform(event)) }
            continuation.finish()
            return stream
        }
        let removal = observerRemoval(id)
        continuation.onTermination = { _ in removal() }
        return stream
    }
}

/// How a new event stream of a job begins: following an attempt, or already ended (with the ended
/// attempt's terminal event, or none).
private enum EventSubscription {
    case observer(UInt64)
    case ended(JobEvent?)
}
