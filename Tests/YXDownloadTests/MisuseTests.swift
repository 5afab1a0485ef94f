import Foundation
import XCTest
import YXQueue
import YXTestServer

@testable import YXDownload

/// Library calls in a wrong order or with the wrong types end in errors, never in a crash.
final class MisuseTests: DownloadTestCase {
    /// A job that names the download manager but is not a ``DownloadJob``.
    private final class NotADownload: Job, @unchecked Sendable {
        override class var managerClass: JobManager.Type { DownloadJobManager.self }
    }

    func testADownloadManagerGivenAnotherJobFailsIt() async throws {
        let job = NotADownload()
        do {
            _ = try await job.run(on: dispatcher)
            XCTFail("expected a failure")
        } catch let error as DownloadError {
            XCTAssertTrue(error.message.contains("DownloadJob"), error.message)
        }
        XCTAssertEqual(job.state, .failed)
    }
}
