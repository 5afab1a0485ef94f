import XCTest

@testable import YXDownload

/// Credentials are never shown: in parsed URLs, and in text that only looks like one (a list line that
/// is not a URL, a redirect target, a line of curl's verbose output).
final class URLRedactionTests: XCTestCase {
    func testCredentialsInTextAreHidden() {
        let cases: [(String, String)] = [
            ("http://eve:pw@example.com/a", "http://…@example.com/a"),
            ("to 'http://eve:pw@example.com:81/a' now", "to 'http://…@example.com:81/a' now"),
            ("http//eve:TopSecret2@127.0.0.1/x", "http//…@127.0.0.1/x"),
            ("http:/eve:TopSecretD@127.0.0.1/x", "http:/…@127.0.0.1/x"),
            ("https:eve:TopSecretE@127.0.0.1/x", "https:…@127.0.0.1/x"),
            ("HTTP://eve@[::1]/x", "HTTP://…@[::1]/x"),
            ("Location: http://zed:LEAK@h/b http://u:p@h2/c", "Location: http://…@h/b http://…@h2/c"),
            ("http://a:b@c@host/x", "http://…@host/x"),
            ("no credentials: http://example.com/a", "no credentials: http://example.com/a"),
            ("", ""),
        ]
        for (text, expected) in cases {
            XCTAssertEqual(URLRedaction.redactingCredentials(in: text), expected, text)
        }
    }

    func testRandomTextNeverKeepsWhatStandsBeforeAnAt() {
        // Whatever precedes an `@` inside its authority is gone, whatever the text around it.
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ab:/@ '\"[é\t.")
        for _ in 0..<2_000 {
            let text = String((0..<Int.random(in: 0...24, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let secret = "S3cr:t"
            let redacted = URLRedaction.redactingCredentials(in: text + "http://" + secret + "@host/" + text)
            XCTAssertFalse(redacted.contains("S3cr"), "\(text) → \(redacted)")
        }
    }
}
