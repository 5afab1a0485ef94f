import Foundation
import XCTest
import YXQueue

@testable import YXDownload

/// What a download's step reports when it begins after its attempt ended.
final class DownloadStepTests: DownloadTestCase {
    private final class FailingStep: DownloadStep, @unchecked Sendable {
        override func perform(_ finish: @escaping Completion) {
            finish(.failure(DownloadError(.transfer, "the connection was cut", url: "http://example.com/a.bin")))
        }
    }

    private final class Outcomes: @unchecked Sendable {
        private let lock = NSLock()
        private var results: [Result<(any Sendable)?, any Error>] = []
        func add(_ result: Result<(any Sendable)?, any Error>) { lock.withLock { results.append(result) } }
        var all: [Result<(any Sendable)?, any Error>] { lock.withLock { results } }
    }

    /// A step that begins after another step's failure ended the attempt reports that failure, not a
    /// cancel: the failing step tells its job after it told the session, often on another thread, and a
    /// cancel that came first ended the job canceled instead of failed (seen under load in
    /// `DescriptorLifetimeTests`: a segmented download whose part was cut).
    func testAStepThatBeginsAfterAFailureReportsThatFailure() {
        let session = makeSession("a.bin")
        let outcomes = Outcomes()
        FailingStep(queue: "test", resourceIdentifier: "part 0", session: session).execute { outcomes.add($0) }
        DownloadStep(queue: "test", resourceIdentifier: "part 1", session: session).execute { outcomes.add($0) }
        let results = outcomes.all
        XCTAssertEqual(results.count, 2)
        for result in results {
            guard case .failure(let error as DownloadError) = result else { return XCTFail("\(result)") }
            XCTAssertEqual(error.message, "the connection was cut")
        }
        XCTAssertTrue(session.isClosed)
    }

    /// After a cancel (the job's end), a step that begins completes as canceled.
    func testAStepThatBeginsAfterACancelIsCanceled() {
        let session = makeSession("b.bin")
        session.end()
        let outcomes = Outcomes()
        DownloadStep(queue: "test", resourceIdentifier: "part 1", session: session).execute { outcomes.add($0) }
        guard case .failure(let error)? = outcomes.all.first else { return XCTFail("\(outcomes.all)") }
        XCTAssertTrue(error is CancellationError, "\(error)")
    }
}
