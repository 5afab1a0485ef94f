import XCTest
@testable import YXJobStore

final class InsertAlignmentTests: XCTestCase {
    func testRowsLineUpWithInsertedRequestsAndConflictsAreNil() throws {
        let inputs: [String?] = [nil, "a", "a", "b", nil, "c"]
        // "b" conflicted with a live job; the second "a" with the first.
        let returned: [(id: Int64, key: String?)] = [(14, "c"), (10, nil), (11, "a"), (13, nil)]
        XCTAssertEqual(try InsertAlignment.align(inputs: inputs, returned: returned), [10, 11, nil, nil, 13, 14])
    }

    func testMisalignedRowsAreAnError() {
        XCTAssertThrowsError(try InsertAlignment.align(inputs: [nil, nil], returned: [(1, nil)]))
        XCTAssertThrowsError(try InsertAlignment.align(inputs: ["a"], returned: [(1, "a"), (2, nil)]))
    }
}
