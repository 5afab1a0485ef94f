import XCTest
import YXJobStore
import YXQueue

/// YXQueue's RetryPolicy as the stores keep it.
final class RetryPolicyColumnsTests: XCTestCase {
    func testEveryFieldSurvivesTheColumns() {
        let policies = [
            RetryPolicy(retries: 3, initialDelay: 0.25, maxDelay: 30, jitter: 0.1, maxRetryAfter: 90, scope: .transientErrors),
            RetryPolicy(retries: 0, initialDelay: 0, maxDelay: 0, jitter: 0, maxRetryAfter: 0, scope: .allErrors),
            JobOptions.defaultRetryPolicy,
            .never,
        ]
        for policy in policies {
            XCTAssertEqual(RetryPolicyColumns(policy).policy, policy)
        }
    }

    func testAttemptsAreRetriesPlusOne() {
        let columns = RetryPolicyColumns(RetryPolicy(retries: 4, initialDelay: 1.5, maxDelay: 60))
        XCTAssertEqual(columns.maximumAttempts, 5)
        XCTAssertEqual(columns.initialDelayMilliseconds, 1500)
        XCTAssertEqual(columns.maximumDelayMilliseconds, 60_000)
        XCTAssertEqual(columns.scope, "transient_errors")
        XCTAssertEqual(RetryPolicyColumns(.never).maximumAttempts, 1)
        // Endless retries fit PostgreSQL's 32-bit column; an absurd delay saturates instead of trapping.
        let endless = RetryPolicyColumns(RetryPolicy(retries: .max, maxDelay: 1e300))
        XCTAssertEqual(endless.maximumAttempts, Int(Int32.max))
        XCTAssertEqual(endless.maximumDelayMilliseconds, .max)
    }

    func testRowsOfTheFirstSchemaReadAsBefore() {
        // Version 1 rows get the column defaults of the migration: every error, an hour of Retry-After.
        let old = RetryPolicyColumns(
            maximumAttempts: 5, initialDelayMilliseconds: 1000, maximumDelayMilliseconds: 3_600_000, jitter: 0.25,
            maximumRetryAfterMilliseconds: 3_600_000, scope: "all_errors"
        )
        XCTAssertEqual(old.policy, JobOptions.defaultRetryPolicy)
    }

    func testTheDefaultRetriesEveryErrorFourTimes() {
        let policy = JobOptions().retry
        XCTAssertEqual(policy.retries, 4)
        XCTAssertEqual(policy.scope, .allErrors)
        XCTAssertEqual(policy.maxDelay, 3600)
        struct Plain: Error {}
        XCTAssertNotNil(policy.delay(after: Plain(), retriesUsed: 3))
        XCTAssertNil(policy.delay(after: Plain(), retriesUsed: 4))
    }
}
