import ArgumentParser
import XCTest
@testable import YXDownloadCLI

/// A download's arguments parsed by the download command alone (the start-up's short cut) give the
/// download the root command's parse gives, and every other command line is left to the root.
final class DownloadParseTests: XCTestCase {
    func testTheDownloadCommandAloneParsesADownloadAsTheRootDoes() throws {
        let commandLines: [[String]] = [
            ["urls.txt"],
            ["urls.txt", "-j", "5"],
            ["-j16", "-x", "4", "-d", "out", "--no-sync", "-q", "-i", "-", "https://example.com/a.iso"],
            ["--json", "--retries", "2", "--retry-wait", "0.5", "-H", "X-A: b", "-H", "X-C: d", "--max-speed", "2M",
             "https://example.com/a", "https://example.com/b"],
            ["-k", "-U", "agent/1", "--timeout", "9", "--connect-timeout", "3", "--overwrite", "-vv", "--", "list"],
        ]
        for arguments in commandLines {
            let alone = try XCTUnwrap(YXDownloadMain.downloadParsedAlone(arguments), "\(arguments)")
            let root = try XCTUnwrap(YXDownloadCommand.parseAsRoot(arguments) as? DownloadCommand, "\(arguments)")
            var aloneDump = "", rootDump = ""
            dump(alone, to: &aloneDump)
            dump(root, to: &rootDump)
            XCTAssertEqual(aloneDump, rootDump, "\(arguments)")
            XCTAssertTrue(aloneDump.contains(arguments.last!), "\(arguments): the dump shows the values")
        }
    }

    /// `-j16 -x8 -dout`, as aria2c, curl and wget take them: a short option's value may follow it at once.
    func testShortOptionsTakeAJoinedValue() throws {
        let arguments = ["-j16", "-x8", "-dout", "-HX-A: b", "-Uagent/2", "-ilist.txt", "-qk"]
        let command = try XCTUnwrap(YXDownloadMain.downloadParsedAlone(arguments))
        XCTAssertEqual(command.arguments.jobs, 16)
        XCTAssertEqual(command.arguments.connections, 8)
        XCTAssertEqual(command.arguments.dir, "out")
        XCTAssertEqual(command.arguments.request.headers, ["X-A: b"])
        XCTAssertEqual(command.arguments.request.userAgent, "agent/2")
        XCTAssertEqual(command.arguments.source.inputFile, "list.txt")
        XCTAssertTrue(command.arguments.quiet)
        XCTAssertTrue(command.arguments.request.insecure)
        let worker = try XCTUnwrap(YXDownloadCommand.parseAsRoot(["worker", "--queue", "q.db", "-j3", "-x2", "-dw"]) as? WorkerCommand)
        XCTAssertEqual([worker.jobs, worker.connections], [3, 2])
        XCTAssertEqual(worker.dir, "w")
        // A lone joined list name with an `h` in it is a list here; the root's parse alone would take
        // the `h` for `-h` and print its help.
        XCTAssertEqual(YXDownloadMain.downloadParsedAlone(["-i/home/me/urls"])?.arguments.source.inputFile, "/home/me/urls")
    }

    func testCommandLinesThatAreNotADownloadToRunAreLeftToTheRoot() {
        let commandLines: [[String]] = [
            [], ["status", "--queue", "q.db"], ["urls.txt", "worker"], ["help"], ["download", "urls.txt"],
            ["--version"], ["urls.txt", "-h"], ["urls.txt", "--bogus"], ["urls.txt", "-j", "0"],
            ["urls.txt", "--generate-completion-script", "bash"],
        ]
        for arguments in commandLines {
            XCTAssertNil(YXDownloadMain.downloadParsedAlone(arguments), "\(arguments)")
        }
    }
}
