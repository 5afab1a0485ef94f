import Foundation
import XCTest

@testable import YXDownloadCLI

/// The list's two passes: a short list is parsed once (the downloads get the entries that were
/// checked), a long one is read again.
final class InputListTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("input-list-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private func write(_ text: String) throws -> String {
        let path = directory.appendingPathComponent("urls.txt").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// What a run of the command gets: the checked sources' entries (no URL arguments here).
    private func all(_ list: InputList) -> [DownloadListEntry] {
        var entries = CheckedSources(sources: DownloadSources(urls: [], listPath: "urls.txt"), list: list, listed: 0)
            .entries()
        var result: [DownloadListEntry] = []
        while let entry = entries.next() { result.append(entry) }
        XCTAssertNil(entries.failure)
        return result
    }

    /// The list's second pass alone.
    private func reread(_ list: InputList) -> [DownloadListEntry] {
        var entries = list.entries()
        var result: [DownloadListEntry] = []
        while let entry = entries.next() { result.append(entry) }
        XCTAssertNil(entries.failure)
        return result
    }

    private let text = """
        # three downloads
        http://a.example/1
          out=one.bin
        http://a.example/2

        http://a.example/3
          dir=sub
        """

    func testAShortListIsParsedOnceAndDownloadsWhatWasChecked() throws {
        let path = try write(text)
        let list = try InputList(path: path)
        let check = try list.check()
        XCTAssertEqual(check.entries, 3)
        XCTAssertEqual(check.errors, [])
        XCTAssertNotNil(list.checkedEntries)
        // The file changes after the check: the downloads are still those that were checked.
        _ = try write("http://b.example/changed\n")
        let entries = all(list)
        XCTAssertEqual(entries.map(\.url.absoluteString), ["http://a.example/1", "http://a.example/2", "http://a.example/3"])
        XCTAssertEqual(entries.map(\.line), [2, 4, 6])
        XCTAssertEqual(entries.map(\.out), ["one.bin", nil, nil])
        XCTAssertEqual(entries.map(\.dir), [[], [], ["sub"]])
    }

    func testALongerListIsReadAgainWithTheSameEntries() throws {
        let path = try write(text)
        let kept = try InputList(path: path, retainingUpTo: 3)
        _ = try kept.check()
        XCTAssertEqual(kept.checkedEntries?.count, 3, "as many entries as the limit are kept")
        let longer = try InputList(path: path, retainingUpTo: 2)
        let check = try longer.check()
        XCTAssertEqual(check.entries, 3)
        XCTAssertNil(longer.checkedEntries)
        XCTAssertEqual(all(longer), all(kept), "the second pass gives what the first kept")
        XCTAssertEqual(reread(kept), kept.checkedEntries, "and the same as reading the kept list again")
    }

    func testAnEmptyListHasNoEntries() throws {
        let list = try InputList(path: try write("# nothing\n\n"))
        XCTAssertEqual(try list.check().entries, 0)
        XCTAssertEqual(all(list), [])
    }
}
