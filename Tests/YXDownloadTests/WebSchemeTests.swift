import Foundation
import XCTest

@testable import YXDownload

/// `URL.webScheme` reads the scheme from the URL's first bytes, and agrees with `URL.scheme`.
final class WebSchemeTests: XCTestCase {
    func testTheSchemeIsReadInAnyCase() throws {
        let cases: [(String, WebScheme?)] = [
            ("http://example.com/a", .http), ("https://example.com/a", .https), ("HTTPS://example.com/", .https),
            ("HtTp://example.com", .http), ("hTTps://u:p@example.com:8443/x?y#z", .https),
            ("ftp://example.com/a", nil), ("httpx://example.com/", nil), ("httpsx://example.com/", nil),
            ("file:///tmp/a", nil), ("h://x", nil), ("https", nil), ("http", nil), ("mailto:a@b", nil),
        ]
        for (text, expected) in cases {
            let url = try XCTUnwrap(URL(string: text), text)
            XCTAssertEqual(url.webScheme, expected, text)
            let scheme = url.scheme?.lowercased()
            XCTAssertEqual(url.webScheme, scheme == "https" ? .https : scheme == "http" ? .http : nil, "agrees with URL.scheme: \(text)")
        }
    }

    func testARelativeURLTakesItsBasesScheme() throws {
        let base = try XCTUnwrap(URL(string: "HTTPS://example.com/dir/"))
        let relative = try XCTUnwrap(URL(string: "file.bin", relativeTo: base))
        XCTAssertEqual(relative.webScheme, .https)
        let schemeless = try XCTUnwrap(URL(string: "file.bin"))
        XCTAssertNil(schemeless.webScheme)
    }
}
