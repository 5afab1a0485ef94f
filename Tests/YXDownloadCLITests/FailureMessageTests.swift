import Foundation
import XCTest
import YXTestServer

@testable import YXDownload

#if canImport(Glibc)
import Glibc
#endif

/// Every failure a person meets, against the real binary: one line that names the file and says what
/// to do, on standard error (`fail  FILE  MESSAGE (URL)`), and the same MESSAGE as `--json`'s `error`.
/// The README's `yxdownload` reference quotes these next to curl's and wget's.
final class FailureMessageTests: CLITestCase {
    /// Runs the command twice, plain and with `--json`; checks the one fail line and the JSON event.
    private func expectFailure(
        _ arguments: [String], file: String, url: String, message: String, httpStatus: Int? = nil,
        executable: String? = nil, prefix: [String] = [],
        sourceFile: StaticString = #filePath, line: UInt = #line
    ) async throws {
        for json in [false, true] {
            let run = prefix + (executable == nil ? [] : [RunningCommand.binary.path]) + arguments + (json ? ["--json"] : [])
            let output = try await RunningCommand(run, in: work, executable: executable).wait()
            XCTAssertEqual(output.status, 1, output.stderr, file: sourceFile, line: line)
            if json {
                let fail = try output.stdoutLines.compactMap { line -> [String: Any]? in
                    let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                    return object?["event"] as? String == "fail" ? object : nil
                }
                XCTAssertEqual(fail.count, 1, output.stdout, file: sourceFile, line: line)
                XCTAssertEqual(fail.first?["error"] as? String, message, file: sourceFile, line: line)
                XCTAssertEqual(fail.first?["file"] as? String, file, file: sourceFile, line: line)
                XCTAssertEqual(fail.first?["http_status"] as? Int, httpStatus, file: sourceFile, line: line)
            } else {
                let failures = output.stderrLines.filter { $0.hasPrefix("fail  ") }
                XCTAssertEqual(failures, ["fail  \(file)  \(message) (\(url))"], file: sourceFile, line: line)
            }
        }
    }

    func testAHostNameThatDoesNotResolve() async throws {
        // `.invalid` never resolves (RFC 6761): nothing leaves this machine but the resolver's question.
        let url = "http://mirror.invalid/a.iso"
        try await expectFailure(
            [url], file: "a.iso", url: url,
            message: "cannot resolve host mirror.invalid: check the host name in the URL, and the network")
    }

    func testAConnectionRefused() async throws {
        let port = try freePort()
        let url = "http://127.0.0.1:\(port)/b.iso"
        try await expectFailure(
            [url, "--retries", "0"], file: "b.iso", url: url,
            message: "connection refused by 127.0.0.1 port \(port): is the server up, and the port right?")
        try await expectFailure(
            [url, "--retries", "2", "--retry-wait", "0.01"], file: "b.iso", url: url,
            message: "connection refused by 127.0.0.1 port \(port) after 3 attempts: is the server up, and the port right?")
    }

    /// Found by a helper's review: a failure after a redirect named the first server (its host and
    /// port) and reported the redirect's status (302) as the failure's.
    func testAFailureAfterARedirectNamesTheRedirectsTarget() async throws {
        let port = try freePort()
        server.serve("/to-closed", .redirect(to: "http://127.0.0.1:\(port)/x.bin"))
        server.serve("/to-nowhere", .redirect(to: "http://nowhere.invalid/x.bin"))
        let closed = server.url("/to-closed").absoluteString
        try await expectFailure(
            [closed, "--retries", "0"], file: "to-closed", url: closed,
            message: "connection refused by 127.0.0.1 port \(port) (a redirect's target): is the server up, and the port right?")
        // curl's own spelling of a URL that it was given (no redirect) is no redirect's target.
        let direct = "http://127.0.0.1:\(port)/a/../x.bin"
        try await expectFailure(
            [direct, "--retries", "0"], file: "x.bin", url: direct,
            message: "connection refused by 127.0.0.1 port \(port): is the server up, and the port right?")
        let nowhere = server.url("/to-nowhere").absoluteString
        try await expectFailure(
            [nowhere], file: "to-nowhere", url: nowhere,
            message: "cannot resolve host nowhere.invalid (a redirect's target): check the host name in the URL, and the network")
    }

    func testAnUntrustedCertificate() async throws {
        let https = try HTTPSFixture(directory: root)
        defer { https.stop() }
        try Data(repeating: 1, count: 1_000).write(to: https.root.appendingPathComponent("c.iso"))
        let url = "https://127.0.0.1:\(https.port)/c.iso"
        try await expectFailure(
            [url], file: "c.iso", url: url,
            message: "TLS failed (SSL certificate problem: self-signed certificate): check the host name; for a server "
                + "you trust, -k skips the check")
    }

    func testAMissingFile() async throws {
        server.serve("/d.iso", .status(404))
        let url = server.url("/d.iso").absoluteString
        try await expectFailure(
            [url, "-d", "dl"], file: "dl/d.iso", url: url,
            message: "HTTP 404 Not Found: the server has no file at this URL; check the URL", httpStatus: 404)
    }

    func testAServerThatKeepsFailing() async throws {
        server.serve("/e.iso", Resource(.generated(size: 10, seed: 1), failures: Array(repeating: .status(503), count: 10)))
        let url = server.url("/e.iso").absoluteString
        try await expectFailure(
            [url, "--retries", "1", "--retry-wait", "0.01"], file: "e.iso", url: url,
            message: "HTTP 503 Service Unavailable after 2 attempts: the server failed; try again later (the same command "
                + "resumes what arrived)",
            httpStatus: 503)
        // Found by a helper's review: 408 is retried but was "refused"; 501 is not retried but was "try again".
        server.serve("/t.iso", .status(408))
        let timedOut = server.url("/t.iso").absoluteString
        try await expectFailure(
            [timedOut, "--retries", "1", "--retry-wait", "0.01"], file: "t.iso", url: timedOut,
            message: "HTTP 408 Request Timeout after 2 attempts: the server stopped waiting for the request; check the "
                + "network, then try again",
            httpStatus: 408)
        server.serve("/n.iso", .status(501))
        let unsupported = server.url("/n.iso").absoluteString
        try await expectFailure(
            [unsupported], file: "n.iso", url: unsupported,
            message: "HTTP 501 Not Implemented: the server cannot serve this request; check the URL", httpStatus: 501)
    }

    func testAChecksumMismatch() async throws {
        serveGenerated("/f.iso", size: 2_000, seed: 2)
        let url = server.url("/f.iso").absoluteString
        let wrong = String(repeating: "0", count: 64)
        try writeList("\(url)\n  checksum=sha-256=\(wrong)\n")
        try await expectFailure(
            ["urls.txt"], file: "f.iso", url: url,
            message: "sha-256 mismatch: expected \(wrong), got \(GeneratedContent.sha256(size: 2_000, seed: 2)); the .part "
                + "was deleted: check the checksum= line, or the file on the server")
        XCTAssertEqual(files(), [], "no file and no .part: its bytes are known bad")
    }

    /// Root is subject to permissions once its capability to override them is gone (`setpriv`).
    func testAFolderThatCannotBeWritten() async throws {
        let setpriv = "/usr/bin/setpriv"
        try XCTSkipUnless(getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv), "needs root and setpriv")
        serveGenerated("/g.iso", size: 1_000, seed: 3)
        let url = server.url("/g.iso").absoluteString
        let folder = work.appendingPathComponent("locked", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        try await expectFailure(
            [url, "-d", "locked"], file: "locked/g.iso", url: url,
            message: "Permission denied (creating locked/g.iso.part): make the folder writable, or choose another --dir",
            executable: setpriv, prefix: ["--bounding-set=-dac_override,-dac_read_search", "--"])
        XCTAssertEqual(files(in: "locked"), [])
    }

    /// A folder under the file's name is neither "the file exists" (skipped, exit 0) nor replaced with
    /// --overwrite (which failed at the rename and left the `.part`): the download fails before its
    /// request and says what is in the way (found by a review). Two entries of one list whose paths
    /// clash, a file's name and another entry's `dir=`, end the same way.
    func testAFolderUnderTheFilesName() async throws {
        serveGenerated("/f.bin", size: 1_000, seed: 6)
        let url = server.url("/f.bin").absoluteString
        try FileManager.default.createDirectory(
            at: work.appendingPathComponent("o/f.bin", isDirectory: true), withIntermediateDirectories: true)
        for overwrite in [[], ["--overwrite"]] {
            try await expectFailure(
                [url, "-d", "o"] + overwrite, file: "o/f.bin", url: url,
                message: "a folder is in the way of o/f.bin: move it, or give the file another name (out= in a list)")
        }
        XCTAssertEqual(server.requests(to: "/f.bin").count, 0)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: work.appendingPathComponent("o").path), ["f.bin"])

        // A file named like an earlier entry's folder is another file of the run: `NAME.1` (it failed on the
        // folder until 2026-11-30).
        serveGenerated("/one.bin", size: 10, seed: 7)
        serveGenerated("/two.bin", size: 20, seed: 8)
        try writeList("\(server.url("/one.bin"))\n  dir=a/b\n\(server.url("/two.bin"))\n  dir=a\n  out=b\n", name: "clash.txt")
        let clash = try await yxdownload("clash.txt", "-d", "c", "-j", "1")
        XCTAssertEqual(clash.status, 0, clash.stderr)
        XCTAssertTrue(holdsGenerated("c/a/b/one.bin", size: 10, seed: 7))
        XCTAssertTrue(holdsGenerated("c/a/b.1", size: 20, seed: 8))
    }

    /// A `NAME.part` that yxdownload did not write (a user's `report.part`, or an earlier run's finished
    /// download of a file named so) is left alone, and the message says so (found by a review: it was
    /// emptied, and its bytes lost).
    func testAPartThatYXDownloadDidNotWrite() async throws {
        serveGenerated("/report", size: 50, seed: 9)
        let url = server.url("/report").absoluteString
        try FileManager.default.createDirectory(at: work.appendingPathComponent("p"), withIntermediateDirectories: true)
        let notes = Data("my precious notes\n".utf8)
        try notes.write(to: work.appendingPathComponent("p/report.part"))
        try await expectFailure(
            [url, "-d", "p"], file: "p/report", url: url,
            message: "p/report.part is in the way: it holds bytes that yxdownload did not mark as its own (a file of "
                + "yours, or one left by an older version), so it is left alone; move it away or delete it, then run the "
                + "same command again")
        XCTAssertEqual(try Data(contentsOf: work.appendingPathComponent("p/report.part")), notes)
        XCTAssertEqual(server.requests(to: "/report").count, 0)
    }

    /// A folder made under a file's name while the file downloads (by another program: an entry of the
    /// same list whose `dir=` is the file's name is refused before it starts): the finished file, until
    /// then unnamed, is kept as `NAME.part`, marked as ours, so that once the folder is moved the same
    /// command finishes it (found by a review: the `.part` had no mark, and the rerun left it as someone
    /// else's).
    func testAFolderMadeUnderTheNameDuringTheDownloadLeavesAPartTheRerunUses() async throws {
        serveGenerated("/x.bin", size: 200_000, seed: 10, bytesPerSecond: 100_000)  // 2 s
        try writeList("\(server.url("/x.bin"))\n  out=c\n", name: "x.txt")
        let running = try RunningCommand(["x.txt", "-d", "o"], in: work)
        try await waitUntil("the download to start") { server.requests(to: "/x.bin").count > 0 }
        try FileManager.default.createDirectory(
            at: work.appendingPathComponent("o/c", isDirectory: true), withIntermediateDirectories: true)
        let clash = await running.wait()
        XCTAssertEqual(clash.status, 1, clash.stderr)
        XCTAssertTrue(clash.stderr.contains("fail  o/c  a folder is in the way of o/c: "), clash.stderr)
        let part = work.appendingPathComponent("o/c.part").path
        let fd = open(part, O_RDONLY)
        XCTAssertGreaterThanOrEqual(fd, 0, "the finished bytes are kept")
        XCTAssertNotNil(ResumeMark.read(from: fd), "and marked as ours")
        close(fd)
        try FileManager.default.moveItem(
            at: work.appendingPathComponent("o/c"), to: work.appendingPathComponent("o/c-moved"))
        let again = try await yxdownload("x.txt", "-d", "o")
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(holdsGenerated("o/c", size: 200_000, seed: 10))
    }

    /// The last step, naming the finished file, refused by the kernel (`strace` injects the error into
    /// the real binary's `linkat`): the message names the file that could not be made, not the write.
    func testTheFinishedFileCannotBeNamed() async throws {
        let strace = ["/usr/bin/strace", "/bin/strace"].first { FileManager.default.isExecutableFile(atPath: $0) }
        try XCTSkipUnless(strace != nil, "needs strace (scripts/test installs it)")
        serveGenerated("/h.iso", size: 100_000, seed: 4)
        let url = server.url("/h.iso").absoluteString
        let inject = { (fault: String) in ["-f", "-qq", "-o", "/dev/null", "-e", "trace=linkat", "-e", "inject=linkat:\(fault)"] }
        // Its final name: every way of naming it refused.
        try await expectFailure(
            [url, "-d", "out"], file: "out/h.iso", url: url,
            message: "Permission denied (creating out/h.iso): make the folder writable, or choose another --dir",
            executable: strace, prefix: inject("error=EACCES"))
        // The final name taken meanwhile, then `NAME.part` too: the `.part` is the name that failed.
        try await expectFailure(
            [url, "-d", "out"], file: "out/h.iso", url: url,
            message: "File exists (creating out/h.iso.part): another program made that name meanwhile; run the same command again",
            executable: strace, prefix: inject("error=EEXIST:when=1..2"))
        XCTAssertEqual(files(in: "out"), [], "an unnamed file that got no name leaves nothing behind")
    }

    /// A `.part` that is a symbolic link (someone else who can write in the folder put it there) is never
    /// followed: nothing outside the folder is written, truncated or created, with one connection or
    /// several.
    func testAPartThatIsASymbolicLinkIsNeverFollowed() async throws {
        serveGenerated("/v.bin", size: 5_000, seed: 5)
        let url = server.url("/v.bin").absoluteString
        let fm = FileManager.default
        let outside = work.appendingPathComponent("outside", isDirectory: true)
        try fm.createDirectory(at: outside, withIntermediateDirectories: true)
        try fm.createDirectory(at: work.appendingPathComponent("out"), withIntermediateDirectories: true)
        try Data("victim".utf8).write(to: outside.appendingPathComponent("victim"))
        let message = "out/v.bin.part is a symbolic link, which yxdownload never follows: remove it, or choose another --dir"
        for (target, connections) in [("victim", "1"), ("victim", "4"), ("created", "1"), ("created", "4")] {
            let link = work.appendingPathComponent("out/v.bin.part")
            try? fm.removeItem(at: link)
            try fm.createSymbolicLink(atPath: link.path, withDestinationPath: "../outside/\(target)")
            try await expectFailure(["-d", "out", "-x", connections, url], file: "out/v.bin", url: url, message: message)
            XCTAssertEqual(try Data(contentsOf: outside.appendingPathComponent("victim")), Data("victim".utf8))
            XCTAssertFalse(fm.fileExists(atPath: outside.appendingPathComponent("created").path), "created through a link")
            XCTAssertEqual(try fm.destinationOfSymbolicLink(atPath: link.path), "../outside/\(target)", "the link is left as it was")
            XCTAssertFalse(fm.fileExists(atPath: work.appendingPathComponent("out/v.bin").path))
        }
    }

    /// A `dir=` folder inside the output directory that is a symbolic link to elsewhere is not followed
    /// either: the entry fails, the others go on (found by a helper's review).
    func testADirFolderThatIsASymbolicLinkIsNeverFollowed() async throws {
        serveGenerated("/w.bin", size: 2_000, seed: 6)
        serveGenerated("/ok.bin", size: 1_000, seed: 7)
        let fm = FileManager.default
        let outside = work.appendingPathComponent("outside", isDirectory: true)
        try fm.createDirectory(at: outside, withIntermediateDirectories: true)
        try fm.createDirectory(at: work.appendingPathComponent("out"), withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: work.appendingPathComponent("out/sub").path, withDestinationPath: "../outside")
        let url = server.url("/w.bin").absoluteString
        try writeList("\(url)\n  dir=sub/deeper\n\(server.url("/ok.bin"))\n")
        for json in [false, true] {
            let output = try await RunningCommand(["urls.txt", "-d", "out"] + (json ? ["--json"] : []), in: work).wait()
            XCTAssertEqual(output.status, 1, output.stderr)
            let message = "out/sub is a symbolic link, which yxdownload never follows (dir=): remove it, or change dir="
            if json {
                XCTAssertTrue(output.stdout.contains("\"error\":\"\(message)\""), output.stdout)
            } else {
                XCTAssertEqual(output.stderr.split(separator: "\n").filter { $0.hasPrefix("fail  ") }, ["fail  out/sub/deeper/w.bin  \(message) (\(url))"])
            }
            XCTAssertEqual(try fm.contentsOfDirectory(atPath: outside.path), [], "nothing written through the link")
            XCTAssertTrue(holdsGenerated("out/ok.bin", size: 1_000, seed: 7))
        }
    }

    /// The final rename goes by path: a `.part` that someone who can write in the folder replaced during
    /// the download (moved away, another file put in its place) is not renamed to the final name, with
    /// one connection or several; the file put there is left as it is.
    func testAPartReplacedDuringTheDownloadIsNotRenamed() async throws {
        // Four parts with -x 4 (a sidecar keeps their state); one stream at 500 kB/s takes 8 s, four 2 s: the
        // file below must be planted before the download ends, however slowly this process gets to it.
        let url = server.url("/r.bin").absoluteString
        let fm = FileManager.default
        try fm.createDirectory(at: work.appendingPathComponent("out"), withIntermediateDirectories: true)
        let part = work.appendingPathComponent("out/r.bin.part")
        for connections in ["1", "4"] {
            serveGenerated("/r.bin", size: 4_000_000, seed: 8, bytesPerSecond: 500_000)
            // A `.part` from an earlier run (marked as one of ours, as a download that was killed before
            // its first state leaves it): the download writes it under its name (not an unnamed file).
            try? fm.removeItem(at: work.appendingPathComponent("out/moved"))
            try Data("left by an earlier run".utf8).write(to: part)
            let fd = open(part.path, O_RDWR)
            XCTAssertTrue(ResumeMark.write(ResumeMark.ownership, to: fd), "the ownership mark")
            close(fd)
            let run = try RunningCommand(["-d", "out", "-x", connections, url], in: work)
            try await waitUntil("the download to be under way") { fileSize("out/r.bin.part") > 100_000 }
            try fm.moveItem(at: part, to: work.appendingPathComponent("out/moved"))
            // As long as the file: nothing but the sidecar's word tells it from the download.
            let planted = Data(count: 4_000_000)
            try planted.write(to: part)
            // Planted: the rest of the download, and the runs below, at full speed.
            await server.liftPace()
            let output = await run.wait()
            XCTAssertEqual(output.status, 1, output.stderr)
            let failures = output.stderrLines.filter { $0.hasPrefix("fail  ") }
            XCTAssertEqual(failures.count, 1, output.stderr)
            XCTAssertEqual(
                failures,
                ["fail  out/r.bin  out/r.bin.part was replaced by another file during the download, so it was not renamed "
                    + "to out/r.bin; move that file away, then run the same command again to download it from the start "
                    + "(\(url))"], output.stderr)
            XCTAssertFalse(fm.fileExists(atPath: work.appendingPathComponent("out/r.bin").path), "renamed the planted file")
            XCTAssertEqual(try Data(contentsOf: part), planted, "the file put in place was changed")
            XCTAssertFalse(fm.fileExists(atPath: part.path + ".meta"), "a sidecar that describes the replaced file")

            // Found by a helper's review: the next run took the planted file for the finished download
            // (the sidecar said so). It leaves it alone (not ours: no state, no mark), and once it is
            // moved away downloads the file again.
            let refused = try await RunningCommand(["-d", "out", "-x", connections, url], in: work).wait()
            XCTAssertEqual(refused.status, 1, refused.stderr)
            XCTAssertTrue(refused.stderr.contains("out/r.bin.part is in the way: it holds bytes that yxdownload did not mark as its own"), refused.stderr)
            XCTAssertEqual(try Data(contentsOf: part), planted, "the file put in place was changed")
            try fm.removeItem(at: part)
            let again = try await RunningCommand(["-d", "out", "-x", connections, url], in: work).wait()
            XCTAssertEqual(again.status, 0, again.stderr)
            XCTAssertTrue(holdsGenerated("out/r.bin", size: 4_000_000, seed: 8), "the next run's file")
            try fm.removeItem(at: work.appendingPathComponent("out/r.bin"))
        }
    }

    /// A port nothing listens on (bound, then closed).
    private func freePort() throws -> Int {
        let (socket, port) = try loopbackSocket()
        close(socket)
        return port
    }
}
