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
}
