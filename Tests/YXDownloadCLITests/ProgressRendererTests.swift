import Foundation
import XCTest
import YXDownload
@_spi(YXQueueInternals) import YXQueue

@testable import YXDownloadCLI
import YXTerminal

/// The terminal display fed to a fake terminal of a fixed size.
final class ProgressRendererTests: XCTestCase {
    /// A terminal that records what is written to it.
    final class FakeTerminal: @unchecked Sendable {
        private let lock = NSLock()
        private var _out = ""
        private var _err = ""
        var out: String { lock.withLock { _out } }
        var err: String { lock.withLock { _err } }

        func console(columns: Int, rows: Int = 24, errorSharesTerminal: Bool = true) -> Console {
            Console(
                writeOut: { text in self.lock.withLock { self._out += text } },
                writeErr: { text in self.lock.withLock { self._err += text } },
                isTerminal: true, errorSharesTerminal: errorSharesTerminal, size: { (columns, rows) })
        }

        func reporter(columns: Int, rows: Int = 24, errorSharesTerminal: Bool = true) -> (TerminalReporter, TerminalScreen) {
            let console = console(columns: columns, rows: rows, errorSharesTerminal: errorSharesTerminal)
            let screen = TerminalScreen(console: console)
            return (TerminalReporter(screen: screen, console: console), screen)
        }
    }

    private func item(_ name: String) -> DownloadItem {
        DownloadItem(url: "http://example.com/\(name)", file: "dl/\(name)", name: name)
    }

    private func active(_ name: String, bytes: Int64, total: Int64?, speed: Double) -> ActiveDownload {
        ActiveDownload(
            item: item(name), progress: DownloadProgress(bytes: bytes, total: total, bytesPerSecond: speed, bytesReceived: bytes))
    }

    func testABarHasNamePercentBytesSpeedAndETAAndFitsTheWidth() {
        let line = ProgressLine.download(
            active("debian.iso", bytes: 409_052_774, total: 1 << 30, speed: 25_690_112), width: 99)
        XCTAssertEqual(
            line,
            "debian.iso            [##########>                 ]  38%  390.1 MiB/1.00 GiB   24.5 MiB/s ETA 0:26")
        XCTAssertLessThanOrEqual(TextWidth.of(line), 99)
    }

    func testNarrowTerminalsDropFieldsAndLongNamesAreCut() {
        let download = active(String(repeating: "very-long-name-", count: 8) + ".bin", bytes: 500, total: 1000, speed: 100)
        for width in [20, 30, 40, 59, 60, 79, 80, 120, 200] {
            let line = ProgressLine.download(download, width: width)
            XCTAssertLessThanOrEqual(TextWidth.of(line), width, "width \(width): \(line)")
            XCTAssertTrue(line.hasPrefix("very-long"), line)
            if width >= 40 { XCTAssertTrue(line.contains("50%"), "width \(width): \(line)") }
        }
        XCTAssertEqual(ProgressLine.download(download, width: 60), "very-long-name-very-l…  50%        500 B/1000 B      100 B/s")
    }

    func testWideCharactersCountTwoColumns() {
        let line = ProgressLine.download(active("日本語のファイル名.txt", bytes: 1, total: 2, speed: 1), width: 50)
        XCTAssertLessThanOrEqual(TextWidth.of(line), 50, line)
        XCTAssertEqual(TextWidth.of("日本"), 4)
        XCTAssertEqual(TextWidth.of("e\u{301}"), 1, "a combining accent takes no column")
    }

    func testUnknownLengthShowsBytesWithoutPercent() {
        let line = ProgressLine.download(active("stream", bytes: 2048, total: nil, speed: 1024), width: 80)
        XCTAssertTrue(line.contains("--"), line)
        XCTAssertTrue(line.contains("2.0 KiB"), line)
        XCTAssertTrue(line.hasSuffix("ETA --:--"), line)
    }

    func testRedrawReplacesTheBarsInPlaceAndFinishedFilesScrollAbove() {
        let terminal = FakeTerminal()
        let (reporter, _) = terminal.reporter(columns: 61)
        var totals = RunTotals(listed: 3)
        reporter.tick(active: [active("a.bin", bytes: 10, total: 100, speed: 5), active("b.bin", bytes: 0, total: nil, speed: 0)], totals: totals)
        let first = terminal.out
        XCTAssertTrue(first.hasPrefix("\u{1B}[?25l"), "the cursor is hidden while bars show")
        XCTAssertEqual(first.components(separatedBy: "\n").count - 1, 3, "two bars and the overall line")
        for line in first.dropFirst(6).split(separator: "\n") {
            XCTAssertLessThanOrEqual(TextWidth.of(String(line.replacingOccurrences(of: "\u{1B}[2K", with: ""))), 60, String(line))
        }
        XCTAssertTrue(first.contains("[0/3] 10 B  5 B/s  elapsed 0:00  2 running, 0 done, 0 skipp…\n"), "cut at 60 columns: \(first)")

        totals.done = 1
        reporter.finished(item("a.bin"), result: DownloadResult(
            outcome: .downloaded, url: "http://example.com/a.bin", file: URL(fileURLWithPath: "/dl/a.bin"), bytes: 100,
            bytesReceived: 100, resumedFrom: 0, sha256: nil), seconds: 0.5)
        reporter.tick(active: [active("b.bin", bytes: 50, total: nil, speed: 10)], totals: totals)
        let second = String(terminal.out.dropFirst(first.count))
        XCTAssertTrue(second.hasPrefix("\r\u{1B}[3A\u{1B}[2Kdone  dl/a.bin  100 B in 0.50 s (200 B/s)\n\u{1B}[2K"),
            "moves up over the three lines drawn, rewrites them line by line, the finished file first: \(second.debugDescription)")
        XCTAssertTrue(second.contains("[1/3] 50 B  10 B/s  elapsed 0:00  1 running, 1 done"), second)
        XCTAssertFalse(second.contains("\u{1B}[J"), "three rows replace three rows: nothing to erase")

        reporter.end(totals: totals, stoppedBy: nil)
        let last = String(terminal.out.dropFirst(first.count + second.count))
        XCTAssertEqual(last, "\r\u{1B}[2A\u{1B}[J\u{1B}[?25h", "the bars are cleared and the cursor shown again")
        XCTAssertTrue(terminal.err.hasPrefix("yxdownload: 1 done, 0 skipped, 0 failed; 0 B in "), terminal.err)
    }

    /// `-j` bounds the downloads that transfer: one whose bytes are all in and that waits for the disk is
    /// "saving", not "running", and its bar comes after those of the downloads still transferring.
    func testDownloadsWaitingForTheDiskCountAsSavingAndTheirBarsComeLast() {
        let terminal = FakeTerminal()
        let (reporter, _) = terminal.reporter(columns: 120, rows: 5)
        reporter.tick(
            active: [
                active("whole.bin", bytes: 100, total: 100, speed: 50), active("half.bin", bytes: 50, total: 100, speed: 50),
                active("stream.bin", bytes: 70, total: nil, speed: 10), active("empty.bin", bytes: 0, total: 0, speed: 0),
            ],
            totals: RunTotals(listed: 9))
        let lines = terminal.out.components(separatedBy: "\n").map { $0.replacingOccurrences(of: "\u{1B}[2K", with: "") }
        XCTAssertTrue(
            lines.contains { $0.hasSuffix("elapsed 0:00  2 running, 2 saving, 0 done, 0 skipped, 0 failed") },
            "a length not known yet is still running: \(lines)")
        let bars = lines.filter { $0.contains(".bin") }
        XCTAssertEqual(bars.count, 2, "5 rows leave room for two bars: \(lines)")
        XCTAssertTrue(bars[0].contains("half.bin") && bars[1].contains("stream.bin"), "the transferring ones first: \(bars)")
        XCTAssertTrue(lines.contains("… and 2 more saving"), "\(lines)")

        // None saving: the line is as before.
        XCTAssertEqual(
            ProgressLine.overall(RunTotals(listed: 2), running: 1, bytesNow: 0, speed: 0, width: 120),
            "[0/2] 0 B  0 B/s  elapsed 0:00  1 running, 0 done, 0 skipped, 0 failed")
    }

    /// A line for standard error (a failure, a -v log line) while bars show: printed above the bars, which
    /// are drawn again below it, in one write; straight to standard error when that is not the terminal.
    func testLinesForStandardErrorGoAboveTheBars() {
        let terminal = FakeTerminal()
        let (reporter, screen) = terminal.reporter(columns: 80)
        reporter.tick(active: [active("a.bin", bytes: 10, total: 100, speed: 5)], totals: RunTotals(listed: 2))
        let before = terminal.out.count
        screen.print(["yxdownload: [trace] request http://example.com/a.bin"], toStandardError: true)
        let frame = String(terminal.out.dropFirst(before))
        XCTAssertTrue(frame.hasPrefix("\r\u{1B}[2A\u{1B}[2Kyxdownload: [trace] request http://example.com/a.bin\n\u{1B}[2Ka.bin"), frame.debugDescription)
        XCTAssertTrue(frame.contains("[0/2]"), "the bars again, below the line")
        XCTAssertEqual(terminal.err, "")

        let redirected = FakeTerminal()
        let (other, otherScreen) = redirected.reporter(columns: 80, errorSharesTerminal: false)
        other.tick(active: [active("a.bin", bytes: 10, total: 100, speed: 5)], totals: RunTotals(listed: 2))
        let drawn = redirected.out
        otherScreen.print(["a log line"], toStandardError: true)
        XCTAssertEqual(redirected.out, drawn, "the bars are left alone")
        XCTAssertEqual(redirected.err, "a log line\n")
    }

    /// A line printed above the bars that is wider than the window wraps: the rest of its last row is
    /// cleared too (the bar that was there must not show behind it), unless it ends at the margin.
    func testAWrappedLineClearsTheRestOfItsLastRow() {
        let terminal = FakeTerminal()
        let screen = TerminalScreen(console: terminal.console(columns: 20))
        screen.draw(["a bar"])
        let before = terminal.out.count
        screen.print([String(repeating: "x", count: 30), String(repeating: "y", count: 40)])
        let frame = String(terminal.out.dropFirst(before))
        XCTAssertEqual(
            frame,
            "\r\u{1B}[1A\u{1B}[2K" + String(repeating: "x", count: 30) + "\u{1B}[K\n\u{1B}[2K" + String(repeating: "y", count: 40)
                + "\n\u{1B}[2Ka bar\n")
    }

    /// A window made narrower wraps the lines drawn before: the redraw moves up over every row they take.
    func testANarrowedWindowIsRedrawnOverAllTheRowsTheOldLinesTake() {
        let terminal = FakeTerminal()
        let width = Locked(100)
        let console = Console(
            writeOut: { text in terminal.console(columns: 1).writeOut(text) }, writeErr: { _ in }, isTerminal: true,
            errorSharesTerminal: true, size: { (width.withLock { $0 }, 24) })
        let screen = TerminalScreen(console: console)
        screen.draw([String(repeating: "x", count: 90), "short"])
        width.withLock { $0 = 50 }
        let before = terminal.out.count
        screen.draw(["one"])
        let frame = String(terminal.out.dropFirst(before))
        XCTAssertTrue(frame.hasPrefix("\r\u{1B}[3A\u{1B}[2Kone\n\u{1B}[J"), "90 columns take 2 rows of 50: \(frame.debugDescription)")
    }

    func testManyDownloadsShowAtMostTenBarsAndACount() {
        let terminal = FakeTerminal()
        let (reporter, _) = terminal.reporter(columns: 80, rows: 50)
        let downloads = (0..<14).map { active("f\($0)", bytes: 1, total: 10, speed: 1) }
        reporter.tick(active: downloads, totals: RunTotals(listed: 14))
        let lines = terminal.out.split(separator: "\n")
        XCTAssertEqual(lines.count, 12)
        XCTAssertEqual(lines[10], "\u{1B}[2K… and 4 more running")
    }

    func testASmallWindowShowsFewerBars() {
        let terminal = FakeTerminal()
        let (reporter, _) = terminal.reporter(columns: 80, rows: 6)
        reporter.tick(active: (0..<5).map { active("f\($0)", bytes: 1, total: 10, speed: 1) }, totals: RunTotals(listed: 5))
        XCTAssertEqual(terminal.out.split(separator: "\n").count, 5, "3 bars, the count, the overall line")
    }
}

/// The small pieces of the command line.
final class CommandPartsTests: XCTestCase {
    func testByteRates() {
        XCTAssertEqual(ByteRate(argument: "500K")?.bytesPerSecond, 512_000)
        XCTAssertEqual(ByteRate(argument: "2M")?.bytesPerSecond, 2 << 20)
        XCTAssertEqual(ByteRate(argument: "1.5g")?.bytesPerSecond, 1_610_612_736)
        XCTAssertEqual(ByteRate(argument: "800")?.bytesPerSecond, 800)
        XCTAssertEqual(ByteRate(argument: "2MiB/s")?.bytesPerSecond, 2 << 20)
        XCTAssertEqual(ByteRate(argument: "500KB")?.bytesPerSecond, 512_000)
        for bad in ["", "fast", "0", "-1K", "K", "1T", "nan", "0.0001"] {
            XCTAssertNil(ByteRate(argument: bad), bad)
        }
    }

    /// Found by a helper's review: a 251-byte name had no room for `NAME.part` (260 bytes), so its
    /// download could not be resumed, and two such names failed the second after its whole body. A name
    /// keeps room for `NAME.part.meta.tmp`: its stem is cut (at a character), its extension kept.
    func testLongNamesAreCutToLeaveRoomForTheirPartialFiles() {
        var names = OutputNames()
        let long = String(repeating: "m", count: 251) + ".bin"
        let first = names.claim(directory: [], name: long)
        XCTAssertEqual(first.utf8.count, 241)
        XCTAssertTrue(first.hasSuffix("m.bin"))
        let second = names.claim(directory: [], name: long)
        XCTAssertEqual(second, String(first.dropLast(6)) + ".bin.1", "a collision's suffix fits too")
        XCTAssertEqual(second.utf8.count, 241)
        let accented = String(repeating: "é", count: 130)  // 260 bytes, no extension
        let cut = names.claim(directory: [], name: accented)
        XCTAssertEqual(cut, String(repeating: "é", count: 120))
        XCTAssertEqual(names.claim(directory: [], name: "short.bin"), "short.bin")
    }

    /// Found by a user test: `out=conf` and, later, `dir=conf` downloaded the second entry whole, then
    /// failed it on the rename, in every run. A folder of `dir=` is the user's choice: it cannot become
    /// `conf.1`, so that entry is refused before it starts; a file named after a folder does become `NAME.N`.
    func testFoldersAndFilesDoNotShareNames() {
        var names = OutputNames()
        XCTAssertEqual(names.claim(directory: [], name: "conf"), "conf")
        XCTAssertEqual(names.claimFolders(["conf"]), "conf", "an earlier file has the folder's name")
        XCTAssertEqual(names.claimFolders(["conf.part", "x"]), "conf.part", "or the name of its .part")
        XCTAssertNil(names.claimFolders([]))
        XCTAssertNil(names.claimFolders(["sub", "conf"]), "another folder's conf is another path")
        XCTAssertEqual(names.claim(directory: ["sub"], name: "conf"), "conf.1", "sub/conf is a folder now")
        XCTAssertEqual(names.claim(directory: [], name: "sub"), "sub.1")
        XCTAssertEqual(names.claim(directory: [], name: "sub.part"), "sub.part", "a folder has no partial files")
        XCTAssertNil(names.claimFolders(["sub", "conf"]), "one folder serves many entries")
        XCTAssertEqual(names.claimFolders(["sub", "conf.1", "deeper"]), "sub/conf.1", "the file named sub/conf.1")
        XCTAssertEqual(names.claim(directory: ["sub"], name: "inner"), "inner")
        XCTAssertNil(names.claimFolders(["sub", "inner.part.meta.x"]), "only an exact partial name clashes")
    }

    func testCollidingNamesGetSuffixesAndReservePartFiles() {
        var names = OutputNames()
        XCTAssertEqual(names.claim(directory: [], name: "a.bin"), "a.bin")
        XCTAssertEqual(names.claim(directory: [], name: "a.bin"), "a.bin.1")
        XCTAssertEqual(names.claim(directory: ["sub"], name: "a.bin"), "a.bin", "another folder is another file")
        XCTAssertEqual(names.claim(directory: [], name: "a.bin"), "a.bin.2")
        XCTAssertEqual(names.claim(directory: [], name: "a.bin.1"), "a.bin.1.1")
        XCTAssertEqual(names.claim(directory: [], name: "a.bin.part"), "a.bin.part.1", "a.bin's .part is taken")
        for index in 3..<1000 { XCTAssertEqual(names.claim(directory: [], name: "a.bin"), "a.bin.\(index)") }

        // Each of a name's three files, claimed first, keeps the others from it, in a folder too.
        XCTAssertEqual(names.claim(directory: ["d"], name: "x.part.meta"), "x.part.meta")
        XCTAssertEqual(names.claim(directory: ["d"], name: "x"), "x.1", "x's sidecar is taken")
        XCTAssertEqual(names.claim(directory: ["d"], name: "y.part"), "y.part")
        XCTAssertEqual(names.claim(directory: ["d"], name: "y"), "y.1", "y's .part is taken")
        XCTAssertEqual(names.claim(directory: [], name: "y"), "y", "the folder's y is another file")
        XCTAssertEqual(names.claim(directory: ["d", "e"], name: "z"), "z")
        XCTAssertEqual(names.claim(directory: ["d", "e"], name: "z.part"), "z.part.1")
        XCTAssertEqual(names.claim(directory: ["d"], name: "e/z"), "e/z.1", "the same path, however it is split")
        // Canonically equivalent names are one name (one file on macOS), whatever their bytes.
        XCTAssertEqual(names.claim(directory: [], name: "caf\u{E9}"), "caf\u{E9}")
        XCTAssertEqual(names.claim(directory: [], name: "cafe\u{301}"), "cafe\u{301}.1")
        XCTAssertEqual(names.claim(directory: [], name: "caf\u{E9}.part"), "caf\u{E9}.part.1")
        // Even when one of them is ASCII: U+037E (Greek question mark) is canonically a semicolon.
        XCTAssertEqual(names.claim(directory: [], name: "q;"), "q;")
        XCTAssertEqual(names.claim(directory: [], name: "q\u{37E}"), "q\u{37E}.1")
        XCTAssertTrue(PathHash.bytesHashLikeStrings, "the ASCII fast path is in use")
        XCTAssertEqual(PathHash.of("d/", "name.part", droppingLast: 5, adding: ".part.meta"), "d/name.part.meta".hashValue)
        XCTAssertEqual(PathHash.of("d/", "\u{E9}.part", droppingLast: 5), "d/e\u{301}".hashValue)
    }

    func testJSONLinesEscape() {
        let line = JSONLine(["event": .string("fail"), "file": .string("a\"b\\c\n\u{1}é"), "n": .int(5), "s": .seconds(0.5), "x": .null])
        XCTAssertEqual(line.text, #"{"event":"fail","file":"a\"b\\c\n\u0001é","n":5,"s":0.500,"x":null}"#)
        XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(line.text.utf8)))
    }

    /// Any string, quoted, reads back as itself: control characters, quotes, backslashes, DEL, accents
    /// and emoji, in random mixes.
    func testJSONStringsReadBackAsThemselves() throws {
        let pieces = ["a", "Z", "\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "日本", "🦊", " ", "/", "%20"]
        for _ in 0..<2_000 {
            let string = (0..<Int.random(in: 0...12)).map { _ in pieces.randomElement()! }.joined()
            let quoted = JSONLine.quoted(string)
            let read = try JSONSerialization.jsonObject(with: Data("[\(quoted)]".utf8)) as? [String]
            XCTAssertEqual(read, [string], quoted)
            XCTAssertFalse(quoted.dropFirst().dropLast().unicodeScalars.contains { $0.value < 0x20 }, quoted)
        }
    }

    func testFormatting() {
        XCTAssertEqual(ByteFormatting.bytes(0), "0 B")
        XCTAssertEqual(ByteFormatting.bytes(1023), "1023 B")
        XCTAssertEqual(ByteFormatting.bytes(1536), "1.5 KiB")
        XCTAssertEqual(ByteFormatting.bytes(1 << 30), "1.00 GiB")
        XCTAssertEqual(ByteFormatting.duration(65), "1:05")
        XCTAssertEqual(ByteFormatting.duration(3725), "1:02:05")
        XCTAssertEqual(ByteFormatting.duration(nil), "--:--")
        XCTAssertEqual(ByteFormatting.duration(3600 * 2 + 7), "2:00:07")
        XCTAssertEqual(ByteFormatting.elapsed(0.4219), "0.42 s")
        XCTAssertEqual(ByteFormatting.elapsed(12.34), "12.3 s")
        XCTAssertEqual(ByteFormatting.elapsed(125), "2 min 05 s")
        XCTAssertEqual(ByteFormatting.rate(1.5 * 1024 * 1024), "1.5 MiB/s")
        XCTAssertEqual(JSONLine(["c": .string("\u{1F}\u{7F}")]).text, #"{"c":"\u001f\u007f"}"#)
    }

    /// The decimals printed without `String(format:)` are the ones it prints, away from ties (where a
    /// value one rounding error from the half may round either way), for every size of number shown.
    func testDecimalsAreWhatPrintfPrints() {
        var generator = SystemRandomNumberGenerator()
        var compared = 0
        for round in 0..<20_000 {
            let places = round % 4
            let magnitude = [1.0, 10, 1000, 1e6, 1e12][Int.random(in: 0..<5, using: &generator)]
            let value = Double.random(in: -magnitude...magnitude, using: &generator)
            let scaled = value.magnitude * [1.0, 10, 100, 1000][places]
            if abs(scaled - scaled.rounded(.down) - 0.5) < 1e-6 { continue }
            compared += 1
            XCTAssertEqual(ByteFormatting.decimal(value, places: places), String(format: "%.\(places)f", value), "\(value)")
        }
        XCTAssertGreaterThan(compared, 19_000)
        for (value, places, text) in [(0.0, 2, "0.00"), (1.5, 1, "1.5"), (0.25, 1, "0.2"), (0.35, 0, "0"), (9.995, 3, "9.995"),
                                      (1023.96, 1, "1024.0"), (-2.5, 0, "-2"), (1e300, 1, String(format: "%.1f", 1e300)),
                                      (.infinity, 2, String(format: "%.2f", Double.infinity)), (-1e17, 0, String(format: "%.0f", -1e17))] {
            XCTAssertEqual(ByteFormatting.decimal(value, places: places), text, "\(value)")
        }
    }
}
