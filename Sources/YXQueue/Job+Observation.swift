/// Closure handlers: the delegate callbacks as closures, registered with a token.
extension Job {
    /// Calls `handler` with every event of this job, on the job's callback queue, in order, until the
    /// returned token is released or invalidated.
    ///
    /// ```swift
    /// let token = job.observe { job, event in
    ///     if case .progress(let p) = event { print("\(Int(p * 100))%") }
    /// }
    /// ```
    public func observe(_ handler: @escaping @Sendable (Job, JobEvent) -> Void) -> JobObservation {
        observe(.all, handler)
    }

    /// Calls `handler` with this job's events of the given kinds, on the job's callback queue, in
    /// order, until the returned token is released or invalidated.
    ///
    /// ```swift
    /// let ends = job.observe(.terminal) { job, event in print("\(job.name): \(event)") }
    /// ```
    ///
    /// Naming the kinds you need is cheaper: an event no listener wants is not queued at all (see
    /// ``JobEvent/Kinds``).
    public func observe(
        _ kinds: JobEvent.Kinds, _ handler: @escaping @Sendable (Job, JobEvent) -> Void
    ) -> JobObservation {
        JobObservation(removal: observerRemoval(addObserver(kinds: kinds, handler)))
    }

    /// Calls `handler` when the job's first operation begins.
    public func onStart(_ handler: @escaping @Sendable (Job) -> Void) -> JobObservation {
        observe(.started) { job, event in if case .started = event { handler(job) } }
    }

    /// Calls `handler` with each (throttled) progress update.
    public func onProgress(_ handler: @escaping @Sendable (Job, Double) -> Void) -> JobObservation {
        observe(.progress) { job, event in if case .progress(let value) = event { handler(job, value) } }
    }

    /// Calls `handler` when the job finishes successfully.
    public func onFinish(_ handler: @escaping @Sendable (Job, (any Sendable)?) -> Void) -> JobObservation {
        observe(.finished) { job, event in if case .finished(let result) = event { handler(job, result) } }
    }

    /// Calls `handler` when the job fails.
    public func onFail(_ handler: @escaping @Sendable (Job, any Error) -> Void) -> JobObservation {
        observe(.failed) { job, event in if case .failed(let error) = event { handler(job, error) } }
    }

    /// Calls `handler` when the job is canceled or dropped.
    public func onCancel(_ handler: @escaping @Sendable (Job) -> Void) -> JobObservation {
        observe(.canceled) { job, event in if case .canceled = event { handler(job) } }
    }
}
