import XCTest

@testable import YXDownload

/// The header callback's redirect check (`TransferLane.refusedRedirectStatus`): a `3xx` whose `Location`
/// holds a control character is refused; other lines pass. The callback reads the response's status only
/// for a line that `isLocationField` accepts.
final class RedirectCheckTests: XCTestCase {
    private func withBytes<T>(_ line: String, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        var bytes = Array(line.utf8)
        return bytes.withUnsafeMutableBytes { body(UnsafeRawBufferPointer($0)) }
    }

    private func refused(_ line: String, status: Int) -> Int? {
        withBytes(line) { TransferLane.refusedRedirectStatus($0, status: status) }
    }

    func testALocationWithAControlCharacterIsRefusedOnARedirect() {
        XCTAssertEqual(refused("Location: /a\u{01}b\r\n", status: 302), 302)
        XCTAssertEqual(refused("location:/a\u{7F}\r\n", status: 301), 301)
        XCTAssertEqual(refused("LOCATION: \t/a\tb\r\n", status: 307), 307)
        XCTAssertEqual(refused("Location: /a\rb\r\n", status: 308), 308)
    }

    func testOtherLinesPass() {
        // Clean values, with the spaces, tabs and line end that surround them.
        XCTAssertNil(refused("Location: /elsewhere\r\n", status: 302))
        XCTAssertNil(refused("Location:\t /elsewhere \r\n", status: 302))
        // A control character, but not in a redirect.
        XCTAssertNil(refused("Location: /a\u{01}b\r\n", status: 200))
        XCTAssertNil(refused("Location: /a\u{01}b\r\n", status: 400))
        // Not the Location field: another name, a longer one, no colon in ninth place, a name alone.
        XCTAssertNil(refused("Locatiom: /a\u{01}b\r\n", status: 302))
        XCTAssertNil(refused("Locations: /a\u{01}b\r\n", status: 302))
        XCTAssertNil(refused("Location\u{1A}/a\u{01}b\r\n", status: 302))
        XCTAssertNil(refused("Location:", status: 302))
        XCTAssertNil(refused("", status: 302))
    }

    func testOnlyALocationFieldIsOne() {
        for line in ["Location: /x\r\n", "location:/x", "LoCaTiOn: \r\n"] {
            XCTAssertTrue(withBytes(line, TransferLane.isLocationField), line.debugDescription)
        }
        let others = [
            "HTTP/1.1 302 Found\r\n", "Content-Length: 0\r\n", "Date: Sun, 29 Nov 2026 22:00:00 GMT\r\n", "\r\n", "",
            "Location:", "Location : /x\r\n", "Location\u{1A}/x\r\n", "Content-Location: /x\r\n",
        ]
        for line in others {
            XCTAssertFalse(withBytes(line, TransferLane.isLocationField), line.debugDescription)
        }
    }
}
