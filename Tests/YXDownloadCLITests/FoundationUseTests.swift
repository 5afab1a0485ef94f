import Foundation
import XCTest

/// The modules that make up `yxdownload` use only the part of Foundation that swift-foundation's
/// `FoundationEssentials` holds.
///
/// One call of an API that only swift-corelibs-foundation has (`String(format:)`, `Thread`,
/// `DateFormatter`, `CharacterSet`, `NSString`'s methods on `String`, …) links all of
/// swift-corelibs-foundation, CoreFoundation and ICU into the static binary: 93 MB instead of 44 MB,
/// 5,969 protocol conformance records instead of 4,168 for the Swift runtime to scan at each type
/// question, 85,000 relocations instead of 48,600, and about 3 ms more at every start of the command
/// (2026-11-28). `import Foundation` itself costs nothing: only what is called is linked. This test
/// reads the sources for the calls that brought it in before, so that a new one is noticed here, with
/// its file and line, and not in a benchmark weeks later.
final class FoundationUseTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// What is linked into `yxdownload` (the queue commands' modules bring Foundation with their stores).
    private static let modules = ["YXQueue", "YXTerminal", "YXDownload", "YXDownloadCLI"]

    /// Each pattern, with what to use instead.
    private static let banned: [(pattern: String, instead: String)] = [
        (#"String\(format:"#, "ByteFormatting, string interpolation or vsnprintf"),
        (#"replacingOccurrences\("#, "replacing(_:with:)"),
        (#"\.range\(of:"#, "firstRange(of:)"),
        (#"\.contains\("[^"\\]{2,}"\)"#, "firstRange(of:) != nil (Foundation's contains(_:) for text is range(of:))"),
        (#"components\(separatedBy:"#, "split(separator:)"),
        (#"trimmingCharacters\(in:"#, "trimmingWhitespace() or trimmingASCIIWhitespace()"),
        (#"(?<![A-Za-z])Thread[.(]"#, "DetachedThread or a Dispatch queue"),
        (#"(Date|Number|ISO8601Date|ByteCount)Formatter"#, "curl_getdate, ByteFormatting"),
        (#"\bNS[A-Z][A-Za-z]+"#, "the Swift type, or a function of libc"),
        (#"\bCharacterSet\b"#, "Character properties"),
        (#"\b(RunLoop|FileHandle|Scanner|Port)\b"#, "Dispatch, file descriptors"),
    ]

    func testTheDownloadersModulesCallNothingThatLinksCorelibsFoundation() throws {
        var found: [String] = []
        let expressions = try Self.banned.map { (try NSRegularExpression(pattern: $0.pattern), $0.instead) }
        for module in Self.modules {
            let folder = Self.root.appendingPathComponent("Sources/\(module)")
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
            XCTAssertFalse(files.isEmpty, module)
            for file in files.sorted() {
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    // Code only: not comments (doc comments name the APIs they avoid). A `//` in a string
                    // literal ends the line early too, which can only miss a call, not invent one.
                    let code = line.components(separatedBy: "//").first ?? ""
                    let range = NSRange(code.startIndex..., in: code)
                    for (expression, instead) in expressions where expression.firstMatch(in: code, range: range) != nil {
                        found.append("Sources/\(module)/\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))  → use \(instead)")
                    }
                }
            }
        }
        XCTAssertEqual(found, [], "\n" + found.joined(separator: "\n"))
    }

    func testTheCheckFindsWhatItLooksFor() throws {
        let samples = [
            #"let s = String(format: "%.1f", x)"#, #"t.replacingOccurrences(of: "a", with: "b")"#,
            #"if let r = t.range(of: "://") {"#, #"t.contains("://")"#, #"Thread.detachNewThread { }"#,
            #"let f = DateFormatter()"#, #"(path as NSString).lastPathComponent"#, #"t.trimmingCharacters(in: .whitespaces)"#,
        ]
        let expressions = try Self.banned.map { try NSRegularExpression(pattern: $0.pattern) }
        for sample in samples {
            let range = NSRange(sample.startIndex..., in: sample)
            XCTAssertTrue(expressions.contains { $0.firstMatch(in: sample, range: range) != nil }, sample)
        }
        for allowed in [#"DetachedThread.start { }"#, #"t.contains(" " as Character)"#, #"t.firstRange(of: "://")"#] {
            let range = NSRange(allowed.startIndex..., in: allowed)
            XCTAssertFalse(expressions.contains { $0.firstMatch(in: allowed, range: range) != nil }, allowed)
        }
    }
}
