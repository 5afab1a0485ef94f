import Foundation
import XCTest
import YXTerminal

@testable import YXDownloadCLI

final class OutputDirectoryTests: XCTestCase {
    func testTheParentOfAPathIsItWithoutItsLastComponent() {
        XCTAssertEqual(OutputDirectory.parentPath(of: "a/b/c"), "a/b")
        XCTAssertEqual(OutputDirectory.parentPath(of: "a/b/"), "a")
        XCTAssertEqual(OutputDirectory.parentPath(of: "a//b"), "a/")
        XCTAssertEqual(OutputDirectory.parentPath(of: "/a"), "/")
        XCTAssertEqual(OutputDirectory.parentPath(of: "/"), "/")
        XCTAssertEqual(OutputDirectory.parentPath(of: "a"), "")
        XCTAssertEqual(OutputDirectory.parentPath(of: ""), "")
        XCTAssertEqual(OutputDirectory.parentPath(of: "dossier/été/x"), "dossier/été")
    }

    func testMissingParentsAreMadeAndAFileInTheWayIsReported() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("yx-outdir-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let errors = Errors()
        let console = Console(
            writeOut: { _ in }, writeErr: { errors.append($0) }, isTerminal: false, errorSharesTerminal: false,
            size: { (80, 24) })
        let nested = root.appendingPathComponent("one/two/three/").path
        XCTAssertNotNil(OutputDirectory.create(nested, console: console))
        var isDirectory: ObjCBool = false
        XCTAssertTrue(FileManager.default.fileExists(atPath: nested, isDirectory: &isDirectory) && isDirectory.boolValue)
        XCTAssertNotNil(OutputDirectory.create(nested, console: console), "an existing folder is fine")

        let file = root.appendingPathComponent("file").path
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        XCTAssertNil(OutputDirectory.create(file + "/below/deeper", console: console))
        XCTAssertTrue(errors.text.contains("cannot create the output directory"), errors.text)
        XCTAssertTrue(errors.text.contains("Not a directory"), errors.text)
    }

    private final class Errors: @unchecked Sendable {
        private let lock = NSLock()
        private var collected = ""
        var text: String { lock.withLock { collected } }
        func append(_ line: String) { lock.withLock { collected += line } }
    }
}
