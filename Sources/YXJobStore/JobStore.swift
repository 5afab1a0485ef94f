import Foundation

/// A durable home for persistent jobs, shared by every process that opens it.
///
/// Two stores ship: `SQLiteJobStore` (module `YXJobStoreSQLite`: one file, several processes on one
/// machine) and `PostgresJobStore` (module `YXJobStorePostgres`: many workers on many machines). Both
/// pass one conformance suite, and both keep these promises:
///
/// - **Nothing lost.** A job accepted by ``enqueue(_:)`` is in the store when the call returns, and
///   every job ends in exactly one terminal state (``StoredJobState/isTerminal``).
/// - **One live owner.** A claim gives a job to one worker under a lease (`lease_until`) that its
///   heartbeat renews. Outcomes and heartbeats are recorded only for the attempt that holds the lease
///   (``JobLease``): a stale worker's writes are refused. When a worker dies, its jobs become claimable
///   again once the lease expires (``recoverExpiredLeases()``).
/// - **Limits across workers.** A limit set with ``setConcurrencyLimit(_:forKey:)`` is never exceeded
///   by all claims together: the claim checks it atomically.
/// - **Durable dependencies, scheduling, priorities and unique keys**, as ``JobOptions`` describes.
///
/// Most programs use a store through a ``JobWorker`` (which claims, heartbeats and completes) and
/// ``enqueue(_:)``; the lower-level calls are public so that other runners can be built on them. A
/// `Codable` ``JobDefinition`` is stored as its name and its JSON (``enqueue(_:options:)``).
///
/// ```swift
/// let store = try await SQLiteJobStore.open(path: "jobs.sqlite")
/// let results = try await store.enqueue([JobRequest(name: "resize", parameters: Resize(path: "a.png"))])
/// let thumbnail = try await store.enqueue(Thumbnail(path: "a.png"))      // a JobDefinition & Codable
/// print(try await store.status().formattedTable())
/// try await store.close()
/// ```
public protocol JobStore: Sendable {
    /// Stores jobs, all in one transaction; returns one result per request, in order.
    ///
    /// A request whose unique key a live job holds is not stored (``EnqueueResult/refused(existing:)`` or
    /// ``EnqueueResult/joined(existing:)``). A request that depends on a job that already failed, was
    /// canceled or was discarded is stored as canceled. A request that depends on an unknown identifier
    /// throws ``JobStoreError/unknownDependency(_:)`` and stores nothing.
    func enqueue(_ requests: [JobRequest]) async throws -> [EnqueueResult]

    /// Stores the jobs that `batches` gives, all in one transaction, as ``enqueue(_:)`` does, reading
    /// one batch at a time: the memory it needs follows the batch, not the whole list. The batches'
    /// ``JobRequestBatches/concurrencyLimits`` are set first, in the same transaction. Returns how many
    /// requests were stored, joined and refused.
    ///
    /// When `batches` throws, or a request cannot be stored, nothing is stored and the error is thrown.
    /// A store that implements this passes the requests of each batch that joined live jobs to
    /// ``JobRequestBatches/check(_:)``, inside the transaction, before it asks for the next batch; what
    /// the check throws stores nothing either.
    ///
    /// `SQLiteJobStore` and `PostgresJobStore` keep one batch in memory. The default gathers every
    /// batch, then calls ``enqueue(_:)``, and sets the limits before, on their own (they stay when the
    /// batches throw); it checks the joins after storing, where a check that throws cannot undo the
    /// enqueue.
    func enqueue(batches: JobRequestBatches) async throws -> EnqueueCounts

    /// Claims up to `request.limit` ready jobs of the given names, in priority order, under the
    /// concurrency limits of the store, for `request.owner`.
    ///
    /// Ready means available and due (its not-before time has come). The claim is atomic with the
    /// limits: no limit is exceeded, whatever other workers claim at the same time.
    func claim(_ request: ClaimRequest) async throws -> [ClaimedJob]

    /// Renews the leases of running attempts, recording their progress when given.
    ///
    /// - Returns: The attempts whose lease was lost (not renewed), and those with a cancel recorded.
    func heartbeat(_ heartbeats: [JobHeartbeat], leaseDuration: Duration) async throws -> LeaseCheck

    /// Reads, without writing, which of these attempts lost their lease or have a cancel recorded.
    func checkLeases(_ leases: [JobLease]) async throws -> LeaseCheck

    /// Records outcomes, each only if its attempt still holds the lease; releases or cancels the jobs
    /// that depend on the ones that ended.
    ///
    /// - Returns: The attempts whose outcome was refused (their lease was lost).
    func complete(_ completions: [JobCompletion]) async throws -> [JobLease]

    /// Records outcomes as ``complete(_:)`` does, then claims as ``claim(_:)`` does, in one trip to
    /// the store where the store can: a worker whose jobs end one at a time writes each outcome with
    /// the claim of the job that takes its place.
    ///
    /// `SQLiteJobStore` does both in one transaction. The default makes the two calls one after the
    /// other; a claim that fails after the outcomes were recorded is reported in
    /// ``OutcomesThenClaim/claimError``, not thrown.
    ///
    /// - Throws: Only when the outcomes were not recorded (write them again).
    func complete(_ completions: [JobCompletion], thenClaim request: ClaimRequest) async throws -> OutcomesThenClaim

    /// Whether ``complete(_:thenClaim:)`` records and claims in one trip to the store. A ``JobWorker``
    /// combines outcomes with claims only then: made as two calls, the claim would wait for the
    /// outcome's trip, and a job would start later than with the two calls made side by side.
    var combinesOutcomesWithClaims: Bool { get }

    /// Makes the jobs whose lease expired claimable again (or failed, when that was their last allowed
    /// attempt, or canceled, when a cancel was recorded).
    ///
    /// - Returns: How many jobs were recovered.
    @discardableResult
    func recoverExpiredLeases() async throws -> Int

    /// Releases waiting jobs whose prerequisites all succeeded, and cancels those with a prerequisite
    /// that did not. ``complete(_:)`` does this for the jobs it ends; this sweep repairs what a crash
    /// between the two left behind.
    ///
    /// - Returns: How many waiting jobs changed state.
    @discardableResult
    func resolveDependencies() async throws -> Int

    /// How long until the earliest available job of these names becomes due; `nil` when none waits.
    func delayUntilNextJob(names: JobNameFilter) async throws -> Duration?

    /// A number that moves whenever something may have made jobs ready or recorded a cancel: read it
    /// before looking at the store, and pass it to ``waitForChange(after:timeout:)``.
    var changeGeneration: UInt64 { get }

    /// Waits until something may have made jobs ready (an enqueue, a retry, a released limit slot, a
    /// recovered lease) or recorded a cancel, in this or another process, since `generation` was read;
    /// or until `timeout`. Returns at once when the generation already moved or the task is canceled.
    ///
    /// Wake-ups may be spurious; callers look at the store again.
    func waitForChange(after generation: UInt64, timeout: Duration) async

    /// Cancels a job: at once if it has not started (with the jobs that wait on it), by recording the
    /// request if it runs (its worker stops it within about a second).
    @discardableResult
    func cancel(_ id: JobID, reason: String) async throws -> CancelResult

    /// The record of one job, or `nil`.
    func job(_ id: JobID) async throws -> JobRecord?

    /// Records in identifier order.
    func jobs(_ query: JobQuery) async throws -> [JobRecord]

    /// Counts by state, units, running jobs per worker, limits.
    func status() async throws -> JobStoreStatus

    /// Sets (or with `nil` removes) the most jobs of a concurrency key that may run at once across
    /// all workers.
    func setConcurrencyLimit(_ limit: Int?, forKey key: String) async throws

    /// The limits set on the store, by key.
    func concurrencyLimits() async throws -> [String: Int]

    /// Deletes terminal jobs that finished before `date`, with their dependency records.
    ///
    /// - Returns: How many jobs were deleted.
    @discardableResult
    func pruneFinishedJobs(before date: Date) async throws -> Int

    /// Closes the store's connections. Calls after this throw ``JobStoreError/closed``.
    func close() async throws
}

extension JobStore {
    /// `false`: the default ``complete(_:thenClaim:)`` makes two calls.
    public var combinesOutcomesWithClaims: Bool { false }

    /// Records the outcomes, then claims: two calls (see the requirement).
    public func complete(_ completions: [JobCompletion], thenClaim request: ClaimRequest) async throws -> OutcomesThenClaim {
        let refused = completions.isEmpty ? [] : try await complete(completions)
        do {
            return OutcomesThenClaim(refused: refused, claimed: try await claim(request))
        } catch {
            // Thrown only when nothing was recorded: the caller would write the outcomes again.
            if completions.isEmpty { throw error }
            return OutcomesThenClaim(refused: refused, claimError: error)
        }
    }

    /// Gathers every batch, then stores them with one ``enqueue(_:)`` (see the requirement), after
    /// setting the batches' concurrency limits one by one; then checks the joins, if asked.
    public func enqueue(batches: JobRequestBatches) async throws -> EnqueueCounts {
        try batches.validateLimits()
        for (key, limit) in batches.concurrencyLimits.sorted(by: { $0.key < $1.key }) {
            try await setConcurrencyLimit(limit, forKey: key)
        }
        var requests: [JobRequest] = []
        while let batch = try batches.next() { requests += batch }
        var counts = EnqueueCounts()
        guard !requests.isEmpty else { return counts }
        let results = try await enqueue(requests)
        counts.add(results)
        if batches.checksJoins {
            // After the transaction here: what the check throws cannot undo the enqueue.
            let pending = JoinedRequest.pending(requests, results)
            var payloads: [Int64: Data] = [:]
            for join in pending { payloads[join.existing.rawValue] = try await job(join.existing)?.payload }
            try batches.check(try JoinedRequest.joins(pending, payloads: payloads))
        }
        return counts
    }

    /// Stores one job.
    ///
    /// ```swift
    /// let result = try await store.enqueue(JobRequest(name: "email", parameters: Email(to: "a@b.c")))
    /// ```
    @discardableResult
    public func enqueue(_ request: JobRequest) async throws -> EnqueueResult {
        let results = try await enqueue([request])
        guard let result = results.first else { throw JobStoreError.invalidResponse("enqueue returned no result") }
        return result
    }
}
