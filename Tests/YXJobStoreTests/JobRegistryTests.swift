import Foundation
import Logging
import XCTest
@testable import YXJobStore
@_spi(YXQueueInternals) import YXQueue

final class JobRegistryTests: XCTestCase {
    private func claimed(_ name: String, _ payload: Data = Data()) -> ClaimedJob {
        ClaimedJob(
            lease: JobLease(id: JobID(1), attempt: 1, owner: "w"),
            name: name,
            payload: payload,
            failures: 0,
            retry: JobOptions.defaultRetryPolicy,
            timeout: nil,
            priority: 0,
            concurrencyKey: name,
            enqueuedAt: Date(),
            readyAt: Date()
        )
    }

    private func context(_ job: ClaimedJob) -> StoredJobContext {
        StoredJobContext(job: job, logger: Logger(label: "test"), progressBox: ProgressBox())
    }

    func testAnUnknownNameIsADiscard() async {
        let registry = JobRegistry()
        let job = claimed("nobody")
        do {
            _ = try await registry.run(job, context: context(job))
            XCTFail("an unknown name ran")
        } catch {
            guard case JobHandlerError.discard(let reason) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("nobody"), reason)
        }
    }

    func testTypedParametersDecodeOrDiscard() async throws {
        struct Size: Codable, Sendable { var width: Int }
        let seen = Locked<[Int]>([])
        var registry = JobRegistry()
        registry.register("resize", parameters: Size.self, maximumConcurrentJobs: 3) { size, _ in
            seen.withLock { $0.append(size.width) }
        }
        XCTAssertEqual(registry.jobNames, ["resize"])
        XCTAssertEqual(registry.maximumConcurrentJobs(named: "resize"), 3)
        let good = claimed("resize", try JSONEncoder().encode(Size(width: 640)))
        _ = try await registry.run(good, context: context(good))
        XCTAssertEqual(seen.withLock { $0 }, [640])
        let bad = claimed("resize", Data("{}".utf8))
        do {
            _ = try await registry.run(bad, context: context(bad))
            XCTFail("bad parameters ran")
        } catch {
            guard case JobHandlerError.discard = error else { return XCTFail("\(error)") }
        }
    }
}
