import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

@testable import YXDownloadCLI
import YXTerminal

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

    /// A byte that is not UTF-8 (a list saved as Latin-1) would come back as U+FFFD and another URL or
    /// name would be used: the line is an error, found by a review; a comment may hold any bytes.
    func testALineThatIsNotUTF8IsAnError() throws {
        let path = directory.appendingPathComponent("latin1.txt").path
        var bytes = Array("# caf".utf8) + [0xE9] + Array("\nhttp://a.example/caf".utf8) + [0xE9] + Array(".bin\n".utf8)
        bytes += Array("http://a.example/ok.bin\n  out=caf".utf8) + [0xE9] + Array("\nhttp://a.example/fine.bin\n".utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let check = try InputList(path: path).check()
        let reason = "not UTF-8 text (save the list as UTF-8, or write the byte %-escaped in a URL)"
        XCTAssertEqual(check.errors.map(\.description), ["\(path):2: \(reason)", "\(path):4: \(reason)"])
        XCTAssertEqual(check.entries, 1, "only fine.bin")
    }

    /// Every byte from 0x80 up is outside ASCII, where lines are read on their bytes: a lone continuation
    /// byte, a lead byte without its continuation and bytes never used in UTF-8 are errors too.
    func testEveryByteBeyondASCIIIsCheckedAsUTF8() throws {
        let path = directory.appendingPathComponent("bytes.txt").path
        let bad: [UInt8] = [0x80, 0xBF, 0xC3, 0xE2, 0xF0, 0xFF]
        var bytes: [UInt8] = []
        for byte in bad { bytes += Array("http://a.example/x".utf8) + [byte] + Array(".bin\n".utf8) }
        bytes += Array("http://a.example/caf\u{E9}.bin\n".utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let check = try InputList(path: path).check()
        let reason = "not UTF-8 text (save the list as UTF-8, or write the byte %-escaped in a URL)"
        XCTAssertEqual(check.errors.map(\.description), (1...bad.count).map { "\(path):\($0): \(reason)" })
        XCTAssertEqual(check.entries, 1, "only café.bin, written in UTF-8")
    }

    /// A line longer than the limit is refused wherever it ends: in the chunk just read too (found by
    /// a review: a line up to 64 KiB over the limit got through).
    func testALineJustOverTheLimitIsRefused() throws {
        let long = "http://a.example/" + String(repeating: "a", count: LineReader.maximumLineLength)
        let path = try write(long + "\nhttp://a.example/next\n")
        XCTAssertThrowsError(try InputList(path: path).check()) { error in
            XCTAssertTrue("\(error)".contains(":1: line longer than \(LineReader.maximumLineLength) bytes"), "\(error)")
        }
    }

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

    /// The TLS warm-up starts at the first `https` entry (whatever the scheme's case), once; a list
    /// without one never starts it.
    func testTheFirstHTTPSEntryIsAnnouncedOnce() throws {
        var announced = 0
        let mixed = try InputList(path: try write("http://a.example/1\nHTTPS://a.example/2\nhttps://a.example/3\n"))
        var check = try mixed.check(onHTTPS: { announced += 1 })
        XCTAssertEqual(check.entries, 3)
        XCTAssertEqual(announced, 1)
        let plain = try InputList(path: try write("http://a.example/1\n# https://a.example/2\nhttp://https.example/3\n"))
        check = try plain.check(onHTTPS: { announced += 1 })
        XCTAssertEqual(check.entries, 2)
        XCTAssertEqual(announced, 1)
    }

    /// An `https` URL among the arguments starts the warm-up before the list is read (once, whatever the
    /// list holds; even when the list then cannot be read); with none, the list's first `https` entry
    /// does; with neither, nothing does.
    func testAnHTTPSArgumentIsAnnouncedBeforeTheListIsRead() throws {
        let console = Console(
            writeOut: { _ in }, writeErr: { _ in }, isTerminal: false, errorSharesTerminal: false, size: { (80, 24) })
        let path = try write("http://a.example/1\nhttps://a.example/2\n")
        var announced = 0
        var sources = try DownloadSources.from(arguments: ["https://b.example/x"], inputFile: path).get()
        XCTAssertNotNil(CheckedSources.check(sources, console: console, outcome: "-", onHTTPS: { announced += 1 }))
        XCTAssertEqual(announced, 1)
        sources = try DownloadSources.from(arguments: ["http://b.example/x"], inputFile: path).get()
        XCTAssertNotNil(CheckedSources.check(sources, console: console, outcome: "-", onHTTPS: { announced += 1 }))
        XCTAssertEqual(announced, 2)
        sources = try DownloadSources.from(arguments: ["http://b.example/x"], inputFile: nil).get()
        XCTAssertNotNil(CheckedSources.check(sources, console: console, outcome: "-", onHTTPS: { announced += 1 }))
        XCTAssertEqual(announced, 2)
        let missing = directory.appendingPathComponent("missing.txt").path
        sources = try DownloadSources.from(arguments: ["https://b.example/x"], inputFile: missing).get()
        XCTAssertNil(CheckedSources.check(sources, console: console, outcome: "-", onHTTPS: { announced += 1 }))
        XCTAssertEqual(announced, 3)
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

    /// A list read again after it changed (cut short, a line broken, lines added) ends with a failure
    /// at the first difference the second pass can see, and never gives an entry the check did not see
    /// (found by a helper's review: `enqueue` stored a cut-off URL and said nothing).
    func testAListThatChangedAfterItsCheckEndsTheSecondPassWithAFailure() throws {
        let path = try write(text)
        let changes: [(String, String, Int)] = [
            ("http://a.example/1\n  out=one.bin\nhttp://a.example/2\n", "(2 entries, not 3)", 2),
            ("http://a.example/1\n  out=one.bin\nhttp://a.example/2\nftp://a.example/3\n", "urls.txt:4: unsupported scheme", 1),
            (text + "\nhttp://a.example/4\nhttp://a.example/5\n", "more entries than the 3 it had", 3),
            // As many entries, one of them another (found by a helper's review: a URL cut short, an option
            // dropped, got through).
            ("http://a.example/1\n  out=one.bin\nhttp://a.example/2\nhttp://a.example/\n  dir=sub\n", "urls.txt:4 is not the entry", 2),
            ("http://a.example/1\nhttp://a.example/2\nhttp://a.example/3\n  dir=sub\n", "urls.txt:1 is not the entry", 0),
        ]
        for (changed, why, count) in changes {
            let list = try InputList(path: path, retainingUpTo: 0)
            _ = try write(text)
            XCTAssertEqual(try list.check().entries, 3)
            // Rewritten in place, as an editor that truncates would.
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: Data(changed.utf8))
            try handle.close()
            var entries = list.entries()
            var seen: [String] = []
            while let entry = entries.next() { seen.append(entry.url.absoluteString) }
            XCTAssertEqual(seen.count, count, "\(seen)")
            XCTAssertTrue(seen.allSatisfy { ["http://a.example/1", "http://a.example/2", "http://a.example/3"].contains($0) }, "\(seen)")
            let failure = try XCTUnwrap(entries.failure, "no failure for \(changed.debugDescription)")
            XCTAssertTrue(failure.hasPrefix("the input list changed after it was checked"), failure)
            XCTAssertTrue(failure.contains(why), failure)
        }
    }

    /// The same entries written otherwise (comments and blank lines added, CRLF line ends) are the list
    /// that was checked.
    func testTheSameEntriesWrittenOtherwiseAreTheCheckedList() throws {
        let path = try write(text)
        let list = try InputList(path: path, retainingUpTo: 0)
        XCTAssertEqual(try list.check().entries, 3)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(("# added\n\n" + text).replacingOccurrences(of: "\n", with: "\r\n").utf8))
        try handle.close()
        XCTAssertEqual(reread(list).map(\.url.absoluteString), ["http://a.example/1", "http://a.example/2", "http://a.example/3"])
    }

    /// A list named by a path that is a pipe (`-i <(command)`, a FIFO) gives its lines once: they are kept
    /// for the second pass, as standard input's are (found by a helper's review: the second pass found
    /// nothing).
    func testAListFromAPipeIsReadAgainFromWhatWasKept() throws {
        let fifo = directory.appendingPathComponent("list.fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let bytes = Data(text.utf8)
        let writer = Thread {
            let handle = FileHandle(forWritingAtPath: fifo)
            try? handle?.write(contentsOf: bytes)
            try? handle?.close()
        }
        writer.start()
        let list = try InputList(path: fifo, retainingUpTo: 0)
        XCTAssertEqual(try list.check().entries, 3)
        XCTAssertEqual(reread(list).map(\.url.absoluteString), ["http://a.example/1", "http://a.example/2", "http://a.example/3"])
    }

    /// Standard input is kept in a temporary file in `TMPDIR` (as `mktemp` does), or `/tmp`; a folder
    /// that cannot hold it is named in the error.
    func testTheTemporaryCopyOfStandardInputGoesWhereTMPDIRSays() throws {
        let saved = getenv("TMPDIR").map { String(cString: $0) }
        defer {
            if let saved { setenv("TMPDIR", saved, 1) } else { unsetenv("TMPDIR") }
        }
        let missing = directory.appendingPathComponent("no-such-folder").path
        setenv("TMPDIR", missing, 1)
        XCTAssertThrowsError(try InputList(path: "-")) { error in
            let description = (error as? InputList.OpenError)?.description ?? "\(error)"
            XCTAssertTrue(description.contains("in \(missing) (TMPDIR)"), description)
        }
        setenv("TMPDIR", directory.path, 1)
        XCTAssertNoThrow(try InputList(path: "-"))
        unsetenv("TMPDIR")
        XCTAssertNoThrow(try InputList(path: "-"))
    }

    func testAnEmptyListHasNoEntries() throws {
        let list = try InputList(path: try write("# nothing\n\n"))
        XCTAssertEqual(try list.check().entries, 0)
        XCTAssertEqual(all(list), [])
    }
}
