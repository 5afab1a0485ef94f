import Foundation
import XCTest

@testable import YXDownload

/// The origin that Retry-After holds and per-host limits are kept under, and that `status` shows.
final class OriginTests: XCTestCase {
    func testSchemeHostAndPortInLowerCaseWithTheDefaultPort() throws {
        XCTAssertEqual(Origin(try XCTUnwrap(URL(string: "HTTPS://Example.COM/a.iso")))?.description, "https://example.com:443")
        XCTAssertEqual(Origin(try XCTUnwrap(URL(string: "http://example.com:8080/a")))?.description, "http://example.com:8080")
        XCTAssertNil(Origin(try XCTUnwrap(URL(string: "file:///etc/passwd"))))
    }

    /// An IPv6 host keeps its brackets: `http://::1:8080` reads as another address (found by a review).
    func testIPv6HostKeepsItsBrackets() throws {
        XCTAssertEqual(Origin(try XCTUnwrap(URL(string: "http://[::1]:8080/x.bin")))?.description, "http://[::1]:8080")
        XCTAssertEqual(Origin(try XCTUnwrap(URL(string: "https://[2001:DB8::1]/x")))?.description, "https://[2001:db8::1]:443")
    }
}
