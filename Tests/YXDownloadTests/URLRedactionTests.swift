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
            ("http:/eve:TopSecretD@127.0.0.1/x", "http:…@127.0.0.1/x"),
            ("https:eve:TopSecretE@127.0.0.1/x", "https:…@127.0.0.1/x"),
            ("https://eve:pa/ss@host/x", "https://…@host/x"),
            ("HTTP://eve@[::1]/x", "HTTP://…@[::1]/x"),
            ("Location: http://zed:LEAK@h/b http://u:p@h2/c", "Location: http://…@h/b http://…@h2/c"),
            ("http://a:b@c@host/x", "http://…@host/x"),
            // Found by a second review: characters legal in a password that ended a word, and a `//` in one.
            ("http://alice:s3cret)@127.0.0.1:70000/f", "http://…@127.0.0.1:70000/f"),
            ("http://alice:p<w>@h/f and http://alice:it's@h/g", "http://…@h/f and http://…@h/g"),
            ("https://alice:pa//ss@h/x", "https://…@h/x"),
            ("no credentials: http://example.com/a", "no credentials: http://example.com/a"),
            ("", ""),
        ]
        for (text, expected) in cases {
            XCTAssertEqual(URLRedaction.redactingCredentials(in: text), expected, text)
        }
    }

    /// In lines of well-formed URLs (curl's), only an authority's credentials go: a path's `@` stays, and
    /// a header's name is not taken for a user (found by a helper's review).
    func testCredentialsInAuthoritiesAreHiddenAndPathsKept() {
        let cases: [(String, String)] = [
            ("Issue another request to this URL: 'http://alice:pw@127.0.0.1:80/f.bin'", "Issue another request to this URL: 'http://…@127.0.0.1:80/f.bin'"),
            ("< Location: https://zed:LEAK@h/b?x=@y", "< Location: https://…@h/b?x=@y"),
            ("> GET /npm/pkg@1.2.3/file?mail=bob@example.com HTTP/1.1", "> GET /npm/pkg@1.2.3/file?mail=bob@example.com HTTP/1.1"),
            // A word with no `/` before its `@` may be a proxy's `user:password@host`: hidden.
            ("X-Auth:alice@example.com:hunter2", "…@example.com:hunter2"),
            ("a http://u:p@h/x and https://v@w/y", "a http://…@h/x and https://…@w/y"),
            // Found by a second review: a proxy variable without a scheme, a scheme-relative Location, and
            // parentheses and quotes in a password.
            ("* Uses proxy env variable http_proxy == 'alice:s3cret@127.0.0.1:18081'", "* Uses proxy env variable http_proxy == '…@127.0.0.1:18081'"),
            ("< Location: //bob:t0psecret@127.0.0.1:18083/f", "< Location: //…@127.0.0.1:18083/f"),
            ("to 'http://alice:s3(c)ret@h/f' and 'http://alice:it's3cret@h/g'", "to 'http://…@h/f' and 'http://…@h/g'"),
        ]
        for (text, expected) in cases {
            XCTAssertEqual(URLRedaction.redactingCredentials(inAuthoritiesOf: text), expected, text)
        }
    }

    func testRandomTextNeverKeepsWhatStandsBeforeAnAt() {
        // Whatever precedes an `@` inside its authority is gone, whatever the text around it.
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ab:/@ '\"[é\t.)>`(<")
        for _ in 0..<2_000 {
            let text = String((0..<Int.random(in: 0...24, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let secret = "S3cr:t)>'"
            let redacted = URLRedaction.redactingCredentials(in: text + "http://" + secret + "@host/" + text)
            XCTAssertFalse(redacted.contains("S3cr"), "\(text) → \(redacted)")
        }
    }
}
