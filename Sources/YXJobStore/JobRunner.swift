import Foundation

/// What a ``JobWorker`` hands its claimed jobs to.
///
/// ``JobRegistry`` is the runner most workers use: closures registered by name, and ``JobDefinition``
/// types run through a YXQueue `Dispatcher`. Other runners can route jobs elsewhere, as long as they
/// honour Swift task cancellation and report progress through the ``StoredJobContext``.
///
/// How ``run(_:context:)`` ends decides the outcome:
/// - it returns: the job succeeded, with the returned bytes as its result (``JobRecord/result``) unless
///   they are `nil`;
/// - it throws ``JobHandlerError/discard(_:)`` (unknown name, parameters that do not decode): discarded;
/// - it throws ``JobHandlerError/doNotRetry(_:)``: failed for good;
/// - it throws anything else: a failed attempt, retried as the job's ``JobOptions/retry`` policy says;
///   when the worker had canceled the task (cancel recorded in the store, shutdown, timeout), the error is
///   read as that cancel, the shutdown's release, or the timeout.
public protocol JobRunner: Sendable {
    /// The names this runner runs: the worker claims only these. Read once, when the worker starts.
    var jobNames: [String] { get }

    /// The most jobs of `name` this worker runs at once, within its own total; `nil` for no own cap.
    /// Which names have a cap is read once, when the worker starts (it claims them apart).
    func maximumConcurrentJobs(named name: String) -> Int?

    /// Runs one claimed job.
    ///
    /// - Returns: The job's result to store with its success (JSON by convention), or `nil` for none.
    func run(_ job: ClaimedJob, context: StoredJobContext) async throws -> Data?
}

extension JobRunner {
    public func maximumConcurrentJobs(named name: String) -> Int? { nil }
}
