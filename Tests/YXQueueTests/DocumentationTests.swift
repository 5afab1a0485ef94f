import Foundation
import XCTest

/// The code shown in the documentation is the code the tests compile and run: every line of every Swift
/// block of an article (but `import` lines and `Package.swift` manifests) appears, in order, in the test
/// file that runs it. A change to either without the other fails here.
final class DocumentationTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The Swift blocks of a Markdown file, each as its lines.
    static func swiftBlocks(in markdown: String) -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in markdown.components(separatedBy: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if current == nil, trimmed == "```swift" {
                current = []
            } else if current != nil, trimmed == "```" {
                blocks.append(current ?? [])
                current = nil
            } else if current != nil {
                current?.append(line)
            }
        }
        return blocks.filter { block in !block.contains { $0.contains("import PackageDescription") } }
    }

    /// Fails for each line of `blocks` that is not found, in order, in `source`. Lines marked `// yours`
    /// (a server's address, a file's checksum) are the reader's to fill in: the test has its own.
    static func missingLines(of blocks: [[String]], in source: String) -> [String] {
        let sourceLines = source.components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        var missing: [String] = []
        for block in blocks {
            var position = 0
            for line in block {
                let wanted = line.trimmingCharacters(in: .whitespaces)
                if wanted.isEmpty || wanted.hasPrefix("import ") || wanted.hasSuffix("// yours") { continue }
                guard let found = sourceLines[position...].firstIndex(of: wanted) else {
                    missing.append(wanted)
                    continue
                }
                position = found + 1
            }
        }
        return missing
    }

    private func check(_ article: String, against test: String, file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        let markdown = try String(contentsOf: Self.root.appendingPathComponent(article), encoding: .utf8)
        let source = try String(contentsOf: Self.root.appendingPathComponent(test), encoding: .utf8)
        let blocks = Self.swiftBlocks(in: markdown)
        XCTAssertFalse(blocks.isEmpty, "\(article) has no Swift block", file: file, line: line)
        let missing = Self.missingLines(of: blocks, in: source)
        XCTAssertEqual(missing, [], "lines of \(article) that \(test) does not run", file: file, line: line)
    }

    func testTheGettingStartedArticleIsTheCodeTheTestsRun() throws {
        try check("Sources/YXQueue/YXQueue.docc/GettingStarted.md", against: "Tests/YXQueueTests/GettingStartedTests.swift")
    }

    func testTheReadmesOwnJobIsTheCodeTheTestsRun() throws {
        let markdown = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        // Quick start 3 only: from its heading to the next one.
        guard let start = markdown.range(of: "### 3. A job of your own"),
            let end = markdown.range(of: "\n## ", range: start.upperBound..<markdown.endIndex)
        else { return XCTFail("README.md has no quick start 3") }
        let blocks = Self.swiftBlocks(in: String(markdown[start.lowerBound..<end.lowerBound]))
        XCTAssertEqual(blocks.count, 2)
        let source = try String(
            contentsOf: Self.root.appendingPathComponent("Tests/YXQueueTests/ReadmeExampleTests.swift"), encoding: .utf8)
        XCTAssertEqual(Self.missingLines(of: blocks, in: source), [])
    }

    func testTheReadmesDurableJobsAreTheCodeTheTestsRun() throws {
        let markdown = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        // The "Durable jobs" section only: from its heading to the next one of its level.
        guard let start = markdown.range(of: "\n## Durable jobs\n"),
            let end = markdown.range(of: "\n## ", range: start.upperBound..<markdown.endIndex)
        else { return XCTFail("README.md has no Durable jobs section") }
        let blocks = Self.swiftBlocks(in: String(markdown[start.lowerBound..<end.lowerBound]))
        XCTAssertEqual(blocks.count, 1)
        let source = try String(
            contentsOf: Self.root.appendingPathComponent("Tests/YXJobStoreTests/ReadmeDurableJobsTests.swift"),
            encoding: .utf8)
        XCTAssertEqual(Self.missingLines(of: blocks, in: source), [])
    }

    func testTheDownloadArticleIsTheCodeTheTestsRun() throws {
        try check(
            "Sources/YXDownload/YXDownload.docc/GettingStarted.md", against: "Tests/YXDownloadTests/GettingStartedTests.swift")
    }

    func testTheCheckerFindsAChangedLine() {
        let blocks = Self.swiftBlocks(in: "text\n```swift\nlet a = 1\nlet b = 2\n```\n")
        XCTAssertEqual(Self.missingLines(of: blocks, in: "let a = 1\n// extra\nlet b = 2\n"), [])
        XCTAssertEqual(Self.missingLines(of: blocks, in: "let b = 2\nlet a = 1\n"), ["let b = 2"])
        XCTAssertEqual(Self.missingLines(of: blocks, in: "let a = 1\nlet b = 3\n"), ["let b = 2"])
    }
}
