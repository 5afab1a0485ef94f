import XCTest

@testable import YXDownloadCLI

/// How many downloads, and how many files waiting for the disk beyond them, fit a limit of open files.
final class DescriptorBudgetTests: XCTestCase {
    func testWithoutALimitUpToThreeFilesPerSlotWaitForTheDisk() {
        let budget = DescriptorBudget(limit: nil, inUse: 10)
        XCTAssertEqual(budget.jobs(16, connections: 1), 16)
        XCTAssertEqual(budget.finalizing(16, connections: 1), 48)
        XCTAssertEqual(budget.finalizing(100, connections: 1), 192, "at most 192")
    }

    func testFilesWaitingForTheDiskUseOnlyDescriptorsLeftOver() {
        // 20,000 descriptors: room for everything asked.
        XCTAssertEqual(DescriptorBudget(limit: 20_000, inUse: 10).finalizing(16, connections: 1), 48)
        // 64 descriptors: 30 left after the reserve, 7 downloads of 4 take 28: none left to wait beyond them.
        let tight = DescriptorBudget(limit: 64, inUse: 10)
        XCTAssertEqual(tight.jobs(50, connections: 1), 7)
        XCTAssertEqual(tight.finalizing(7, connections: 1), 0)
        // 256 descriptors: 222 left; 16 downloads take 64, and 16 more are kept for those waiting for a
        // slot: 142 left, more than the 48 asked.
        XCTAssertEqual(DescriptorBudget(limit: 256, inUse: 10).finalizing(16, connections: 1), 48)
        // 128 descriptors: 94 left; 16 downloads take 64 and 16 more are kept: 14 may wait for the disk.
        XCTAssertEqual(DescriptorBudget(limit: 128, inUse: 10).finalizing(16, connections: 1), 14)
    }
}
