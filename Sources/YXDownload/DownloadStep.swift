import Foundation
import Logging
import YXQueue

/// An operation of a download's graph (probe, part, finalize): it works on the attempt's
/// ``DownloadSession``, which it is given when it is made.
///
/// A step *uses* the session from the start of its work until it completes. The session's `.part`
/// descriptor is closed as soon as the attempt has ended (a step failed or was canceled, or the file
/// was finalized) and no step uses it any more, so a job that is kept after it ended holds no
/// descriptor. A step that begins after its attempt ended does nothing: it completes with the failure
/// that ended the attempt, or as canceled.
class DownloadStep: QueueOperation, @unchecked Sendable {
    /// The attempt this step works for.
    let session: DownloadSession

    /// The work's completion, as ``QueueOperation/execute(completion:)`` hands it over.
    typealias Completion = @Sendable (Result<(any Sendable)?, any Error>) -> Void

    /// Creates a step of `session`'s attempt.
    init(queue: String, resourceIdentifier: String?, session: DownloadSession) {
        self.session = session
        super.init(queue: queue, resourceIdentifier: resourceIdentifier)
    }

    /// A step made without a session (through the initializer every `QueueOperation` has): it fails at
    /// once with a ``DownloadError`` when it runs.
    required init(queue: String, resourceIdentifier: String? = nil) {
        self.session = DownloadSession.detached()
        super.init(queue: queue, resourceIdentifier: resourceIdentifier)
    }

    /// Uses the session for the time of ``perform(_:)``.
    final override func execute(completion: @escaping Completion) {
        if case .attemptEnded(let failure) = session.beginUse() {
            // A step that ended the attempt with a failure tells its job after it told the session, often
            // on another thread: a step that begins meanwhile reports that same failure. Reported as a
            // cancel, it could reach the job first and end it canceled instead of failed (seen under load:
            // a segmented download whose part was cut ended canceled).
            return completion(.failure(session.isDetached ? DownloadStep.notADownload : failure ?? CancellationError()))
        }
        perform { [session] result in
            // A failure (or cancel) ends the attempt; so does the file's result: it was finalized.
            var ends = true
            var failure: (any Error)?
            switch result {
            case .success(let value): ends = value.holds(exactly: DownloadResult.self)
            case .failure(let error):
                Self.logFailure(error, of: session)
                if !(error is CancellationError) { failure = error }
            }
            session.endUse(endingAttempt: ends, failure: failure)
            completion(result)
        }
    }

    /// A step's failure fails its download: a warning (a cancel is not a failure).
    private static func logFailure(_ error: any Error, of session: DownloadSession) {
        guard !(error is CancellationError) else { return }
        var metadata: Logger.Metadata = ["url": "\(session.redactedURL)", "error": "\(error)"]
        if let error = error as? DownloadError {
            metadata["error"] = "\(error.message)"
            metadata["kind"] = "\(error.kind)"
            if let status = error.httpStatus { metadata["http-status"] = "\(status)" }
        }
        session.logger.warning("download failed", metadata: metadata)
    }

    /// The step's work; call `finish` exactly once.
    func perform(_ finish: @escaping Completion) {
        finish(.success(nil))
    }

    /// A canceled step means its attempt is over (the job was canceled, dropped, or failed elsewhere).
    override func cancel() {
        super.cancel()
        session.end()
    }

    /// The failure of a step that belongs to no download.
    static let notADownload = DownloadError(
        .transfer, "not a download: DownloadJobManager runs DownloadJob only, and its steps need the job's session",
        url: "")
}
