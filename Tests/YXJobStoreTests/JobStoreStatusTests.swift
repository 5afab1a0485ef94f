import Foundation
import XCTest
import YXJobStore

final class JobStoreStatusTests: XCTestCase {
    private func sample() -> JobStoreStatus {
        JobStoreStatus(
            takenAt: Date(timeIntervalSince1970: 1_800_000_000),
            states: StoredJobState.allCases.map {
                JobStoreStatus.StateSummary(
                    state: $0,
                    jobs: $0 == .succeeded ? 12 : ($0 == .running ? 1 : 0),
                    completedUnits: $0 == .succeeded ? 4096 : 0,
                    totalUnits: $0 == .succeeded ? 4096 : 0
                )
            },
            scheduled: 0,
            workers: [
                JobStoreStatus.WorkerSummary(
                    worker: "host:42:abc",
                    jobs: [
                        JobStoreStatus.RunningJob(
                            id: JobID(7),
                            name: "download",
                            attempt: 2,
                            progress: JobProgress(completedUnits: 512, totalUnits: 2048),
                            startedAt: nil,
                            leaseUntil: nil,
                            cancelRequested: false
                        )
                    ]
                )
            ],
            limits: [JobStoreStatus.LimitSummary(key: "download:example.com", limit: 8, running: 1)]
        )
    }

    func testTheTableShowsStatesWorkersAndLimits() {
        let table = sample().formattedTable()
        let lines = table.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "state      jobs  units done  units total")
        XCTAssertTrue(lines.contains("succeeded    12        4096         4096"), table)
        XCTAssertTrue(lines.contains("total        13"), table)
        XCTAssertTrue(lines.contains("host:42:abc    7  download        2    25.0 %  512/2048"), table)
        XCTAssertTrue(lines.contains("download:example.com        1      8"), table)
    }

    func testJSONRoundTrips() throws {
        let status = sample()
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        XCTAssertEqual(try decoder.decode(JobStoreStatus.self, from: try status.jsonData()), status)
        let text = String(decoding: try status.jsonData(prettyPrinted: false), as: UTF8.self)
        XCTAssertTrue(text.contains(#""takenAt":"2027-01-15T08:00:00Z""#), text)
        XCTAssertEqual(status.count(.succeeded), 12)
        XCTAssertEqual(status.live, 1)
    }
}
