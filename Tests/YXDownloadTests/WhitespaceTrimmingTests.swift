import XCTest

@testable import YXDownload

final class WhitespaceTrimmingTests: XCTestCase {
    func testBothEndsLoseTheirWhitespaceOfAnyScript() {
        XCTAssertEqual(" 2M\t".trimmingWhitespace(), "2M")
        XCTAssertEqual("\u{00A0}\u{3000}a b\u{2003}\n".trimmingWhitespace(), "a b")
        XCTAssertEqual("ab".trimmingWhitespace(), "ab")
        XCTAssertEqual(" \t\r\n ".trimmingWhitespace(), "")
        XCTAssertEqual("".trimmingWhitespace(), "")
        XCTAssertEqual("  é\u{301} ".trimmingWhitespace(), "é\u{301}")
        XCTAssertEqual(Substring(" x ").trimmingWhitespace(), "x")
    }
}
