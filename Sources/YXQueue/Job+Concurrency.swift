
/// Swift concurrency: run a job with `await`, wait for its outcome, iterate its events.
extension Job {
    /// Starts the job on `dispatcher` and waits for the end of the attempt.
    ///
    /// Cancelling the calling task cancels the job.
    ///
    /// ```swift
    /// let digest = try await HashJob(path: "/tmp/big.iso").run() as? String
    /// ```
    ///
    /// - Returns: The job's result.
    /// - Throws: The job's error, or ``JobError/canceled`` when it was canceled or dropped.
    @discardableResult
    public func run(on dispatcher: Dispatcher = .shared) async throws -> (any Sendable)? {
        try await withTaskCancellationHandler {
            start(on: dispatcher)
            return try await value
        } onCancel: {
            cancel()
        }
    }

    /// The outcome of the current attempt, waiting for it to end. For a job that is not active: the
    /// outcome of its last attempt, or, for a job never started, of its first attempt.
    ///
    /// - Throws: The job's error, or ``JobError/canceled`` when it was canceled or dropped.
    public var value: (any Sendable)? {
        get async throws {
            try await outcome().get()
        }
    }

    private typealias Outcome = Result<(any Sendable)?, any Error>

    private func outcome() async -> Outcome {
        await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            let pending = Locked<CheckedContinuation<Outcome, Never>?>(continuation)
            let resume: @Sendable (Outcome) -> Void = { outcome in
                pending.withLock { c in
                    c?.resume(returning: outcome)
                    c = nil
                }
            }
            let immediate: Outcome? = core.withLock { s in
                switch (s.isActive, s.state) {
                case (false, .finishedSuccess): return .success(s.result)
                case (false, .finishedFailed): return .failure(s.error ?? JobError.canceled)
                case (false, .canceled), (false, .dropped): return .failure(JobError.canceled)
                default: break
                }
                let box = Locked<UInt64>(0)
                let id = s.addObserver(attempt: s.currentOrNextAttempt) { job, event in
                    switch event {
                    case .finished(let value): resume(.success(value))
                    case .failed(let error): resume(.failure(error))
                    case .canceled: resume(.failure(JobError.canceled))
                    case .started, .progress: return
                    }
                    job.removeObserver(box.withLock { $0 })
                }
                box.withLock { $0 = id }
                return nil
            }
            if let immediate { resume(immediate) }
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
        let (stream, continuation) = AsyncStream.makeStream(of: JobEvent.self, bufferingPolicy: .unbounded)
        let id = core.withLock { s in
            s.addObserver(attempt: s.currentOrNextAttempt) { _, event in
                continuation.yield(event)
                if event.isTerminal { continuation.finish() }
            }
        }
        continuation.onTermination = { [weak self] _ in self?.removeObserver(id) }
        return stream
    }
}
