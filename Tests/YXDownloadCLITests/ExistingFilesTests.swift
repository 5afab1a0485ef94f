import Foundation
import XCTest

@testable import YXDownloadCLI

/// What one listing of an output folder says about each entry's files.
final class ExistingFilesTests: XCTestCase {
    func testAListingTellsFilesPartialFilesAndAbsentOnes() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("existing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base.appendingPathComponent("sub"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        for name in ["a", "b.part", "c.part.meta", "caf\u{E9}", "sub/s", "d.partial"] {
            XCTAssertTrue(FileManager.default.createFile(atPath: base.appendingPathComponent(name).path, contents: Data()))
        }
        var existing = ExistingFiles(base: base.path)
        XCTAssertEqual(existing.presence(directory: [], name: "a"), .file)
        XCTAssertEqual(existing.presence(directory: [], name: "b"), .partial)
        XCTAssertEqual(existing.presence(directory: [], name: "c"), .partial)
        XCTAssertEqual(existing.presence(directory: [], name: "d"), .none, "d.partial is not d's")
        XCTAssertEqual(existing.presence(directory: [], name: "s"), .none, "sub/s is in another folder")
        XCTAssertEqual(existing.presence(directory: ["sub"], name: "s"), .file)
        XCTAssertEqual(existing.presence(directory: ["sub"], name: "a"), .none)
        XCTAssertEqual(existing.presence(directory: ["new"], name: "a"), .none, "a folder not made yet holds nothing")
        XCTAssertEqual(existing.presence(directory: [], name: "cafe\u{301}"), .file, "canonically equivalent")
        // Files made after the listing are not seen (the run's own names never collide: OutputNames).
        XCTAssertTrue(FileManager.default.createFile(atPath: base.appendingPathComponent("late").path, contents: Data()))
        XCTAssertEqual(existing.presence(directory: [], name: "late"), .none)
    }

    func testAFolderThatCannotBeListedIsUnknown() throws {
        // A file where the folder should be: opendir fails with ENOTDIR (not ENOENT), so the entries are
        // looked up one by one.
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("unlisted-\(UUID().uuidString)")
        XCTAssertTrue(FileManager.default.createFile(atPath: base.path, contents: Data("x".utf8)))
        defer { try? FileManager.default.removeItem(at: base) }
        var existing = ExistingFiles(base: base.path)
        XCTAssertEqual(existing.presence(directory: [], name: "a"), .unknown)
        XCTAssertEqual(existing.presence(directory: [], name: "b"), .unknown, "the failed listing is remembered")
    }
}
