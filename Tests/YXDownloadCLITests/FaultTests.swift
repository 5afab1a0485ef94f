import Foundation
import XCTest
import YXTestServer

#if canImport(Glibc)
import Glibc
#endif

/// The faults of real machines, against the real binary on real files: a full disk, a directory that
/// cannot be written, too few file descriptors.
final class FaultTests: CLITestCase {
    private var mounts: [URL] = []

    override func tearDown() async throws {
        for mount in mounts.reversed() {
            _ = try? await tool("/bin/umount", ["-l", mount.path])
        }
        mounts = []
        try await super.tearDown()
    }

    /// Runs a program to its end (at most 60 s); returns its status and output.
    private func tool(_ path: String, _ arguments: [String]) async throws -> CommandOutput {
        guard let output = try await RunningCommand(arguments, in: work, executable: path).wait(timeout: 60) else {
            XCTFail("\(path) \(arguments) did not end within 60 s")
            throw CancellationError()
        }
        return output
    }

    /// Mounts a tmpfs of `size` (e.g. "6m") at `work/relative`; skips the test where that is not allowed.
    @discardableResult
    private func mountTmpfs(_ relative: String, size: String, readOnly: Bool = false) async throws -> URL {
        try await mount("tmpfs", at: relative, options: "size=\(size),mode=0755" + (readOnly ? ",ro" : ""))
    }

    /// Mounts a file system of `type` at `work/relative`; skips the test where that is not allowed.
    private func mount(_ type: String, at relative: String, options: String) async throws -> URL {
        try XCTSkipUnless(getuid() == 0, "mounting a small \(type) needs root (CI runs the suite as root)")
        let folder = work.appendingPathComponent(relative, isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let mounted = try await tool("/bin/mount", ["-t", type, "-o", options, type, folder.path])
        try XCTSkipUnless(mounted.status == 0, "mount -t \(type) is not allowed here: \(mounted.stderr)")
        mounts.append(folder)
        return folder
    }

    /// ramfs keeps no `user.` extended attributes: one stream's resume state goes to the sidecar there,
    /// and a rerun resumes from it.
    func testWithoutExtendedAttributesAStoppedDownloadKeepsASidecarAndResumes() async throws {
        _ = try await mount("ramfs", at: "plain", options: "mode=0755")
        let size: Int64 = 3 << 20
        serveGenerated("/big.bin", size: size, seed: 9, failures: [.dropAfter(bytes: 1 << 20)])
        try writeList("\(server.url("/big.bin"))\n")

        let first = try await yxdownload("urls.txt", "-d", "plain", "--retries", "0")
        XCTAssertEqual(first.status, 1, first.stderr)
        XCTAssertEqual(files(in: "plain"), ["big.bin.part", "big.bin.part.meta"])

        server.resetCounters()
        let rerun = try await yxdownload("urls.txt", "-d", "plain")
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertTrue(holdsGenerated("plain/big.bin", size: size, seed: 9))
        XCTAssertEqual(files(in: "plain"), ["big.bin"])
        let range = server.requests(to: "/big.bin").first?.header("Range")
        XCTAssertNotNil(range, "the rerun resumed the .part")
        XCTAssertNotEqual(range, "bytes=0-")
    }

    /// Fail lines on standard error, by file.
    private func failLines(_ output: CommandOutput) -> [String] {
        output.stderrLines.filter { $0.hasPrefix("fail  ") }
    }

    func testDiskFullFailsClearlyKeepsThePartAndTheRerunResumesAfterSpaceIsFreed() async throws {
        let disk = try await mountTmpfs("full", size: "6m")
        let big: Int64 = 16 << 20
        serveGenerated("/big.bin", size: big, seed: 1)
        let small: [(String, Int64, UInt64)] = [("a.bin", 100_000, 2), ("b.bin", 300_000, 3), ("c.bin", 1, 4)]
        for (name, size, seed) in small { serveGenerated("/\(name)", size: size, seed: seed) }
        try writeList(
            (small.map { "\(server.url("/\($0.0)"))" } + ["\(server.url("/big.bin"))"]).joined(separator: "\n") + "\n")

        let first = try await yxdownload("urls.txt", "-d", "full")
        XCTAssertEqual(first.status, 1, first.stderr)
        let bigFailure = failLines(first).first { $0.hasPrefix("fail  full/big.bin  ") }
        XCTAssertNotNil(bigFailure, first.stderr)
        XCTAssertEqual(
            bigFailure,
            "fail  full/big.bin  No space left on device (writing full/big.bin.part): free some space, then run the same "
                + "command again to resume (\(server.url("/big.bin")))")
        // (Listed inside the mount: an enumeration of `work` does not enter it.)
        XCTAssertFalse(files(in: "full").contains("big.bin"), "no final name for a file that did not fit")
        XCTAssertTrue(files(in: "full").contains("big.bin.part"), "the .part is kept: \(files(in: "full"))")
        XCTAssertGreaterThan(fileSize("full/big.bin.part"), 1 << 20)
        for (name, size, seed) in small where files(in: "full").contains(name) {
            XCTAssertTrue(holdsGenerated("full/\(name)", size: size, seed: seed), "\(name) is whole")
        }

        // Free space: the same mount, larger.
        let grown = try await tool("/bin/mount", ["-o", "remount,size=64m", disk.path])
        XCTAssertEqual(grown.status, 0, grown.stderr)
        server.resetCounters()
        let rerun = try await yxdownload("urls.txt", "-d", "full")
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertTrue(holdsGenerated("full/big.bin", size: big, seed: 1), "every byte right after the disk was full")
        for (name, size, seed) in small {
            XCTAssertTrue(holdsGenerated("full/\(name)", size: size, seed: seed), name)
        }
        XCTAssertEqual(files(in: "full").sorted(), ["a.bin", "b.bin", "big.bin", "c.bin"])
        let range = server.requests(to: "/big.bin").first?.header("Range")
        XCTAssertNotNil(range, "the rerun resumed the .part")
        XCTAssertNotEqual(range, "bytes=0-")
        XCTAssertTrue(rerun.stdout.contains("resumed at"), rerun.stdout)
    }

    func testAReadOnlyOutputDirectoryFailsEachFileClearly() async throws {
        try await mountTmpfs("ro", size: "1m", readOnly: true)
        serveGenerated("/x.bin", size: 10_000, seed: 5)
        serveGenerated("/y.bin", size: 20_000, seed: 6)
        try writeList("\(server.url("/x.bin"))\n\(server.url("/y.bin"))\n")
        let output = try await yxdownload("urls.txt", "-d", "ro")
        XCTAssertEqual(output.status, 1, output.stderr)
        let failures = failLines(output)
        XCTAssertEqual(failures.count, 2, output.stderr)
        for name in ["x.bin", "y.bin"] {
            let line = failures.first { $0.hasPrefix("fail  ro/\(name)  ") }
            XCTAssertEqual(
                line, "fail  ro/\(name)  Read-only file system (creating ro/\(name).part): choose another --dir (\(server.url("/\(name)")))")
        }
        XCTAssertTrue(output.stderr.contains("0 done, 0 skipped, 2 failed"), output.stderr)
        XCTAssertEqual(files(in: "ro"), [])
    }

    func testADirThatCannotBeCreatedFailsThatFileOnly() async throws {
        serveGenerated("/x.bin", size: 10_000, seed: 5)
        serveGenerated("/y.bin", size: 20_000, seed: 6)
        try FileManager.default.createDirectory(at: work.appendingPathComponent("out"), withIntermediateDirectories: true)
        try Data("a file where a folder should be".utf8).write(to: work.appendingPathComponent("out/blocker"))
        try writeList("\(server.url("/x.bin"))\n  dir=blocker/sub\n\(server.url("/y.bin"))\n")
        let output = try await yxdownload("urls.txt", "-d", "out")
        XCTAssertEqual(output.status, 1, output.stderr)
        let failures = failLines(output)
        XCTAssertEqual(failures.count, 1, output.stderr)
        XCTAssertTrue(failures.first?.hasPrefix("fail  out/blocker/sub/x.bin  ") ?? false, output.stderr)
        XCTAssertEqual(
            failures.first,
            "fail  out/blocker/sub/x.bin  Not a directory (creating out/blocker/sub/x.bin.part): a file is in the way of a "
                + "folder; move it or change dir= (\(server.url("/x.bin")))")
        XCTAssertTrue(holdsGenerated("out/y.bin", size: 20_000, seed: 6))
    }

    func testTooFewFileDescriptorsNeitherCrashNorHangAndARerunCompletes() async throws {
        let count = 50
        let size: Int64 = 4 << 20
        for index in 0..<count { serveGenerated("/f\(index)", size: size, seed: UInt64(100 + index)) }
        try writeList((0..<count).map { "\(server.url("/f\($0)"))" }.joined(separator: "\n") + "\n")
        let command = try RunningCommand(
            ["urls.txt", "-d", "out", "-j", "50", "-x", "4", "--retries", "2", "--retry-wait", "0.1", "--no-sync"],
            in: work, setup: "ulimit -n 64")
        let output = await command.wait(timeout: 180)
        let limited = try XCTUnwrap(output, "yxdownload hung with 64 descriptors")
        XCTAssertTrue(limited.status == 0 || limited.status == 1, "no crash: status \(limited.status)\n\(limited.stderr)")
        XCTAssertTrue(
            limited.stderr.contains("the limit of 64 open files (ulimit -n) leaves room for"),
            "the run was sized to the limit: \(limited.stderr)")
        for line in failLines(limited) {
            // `fail  out/fN  REASON (URL)`: a reason a person can act on.
            let reason = line.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: true).dropFirst(2).joined(separator: " ")
            XCTAssertFalse(reason.trimmingCharacters(in: .whitespaces).isEmpty, line)
        }
        for index in 0..<count where files().contains("out/f\(index)") {
            XCTAssertTrue(holdsGenerated("out/f\(index)", size: size, seed: UInt64(100 + index)), "f\(index) is whole")
        }

        let rerun = try await yxdownload("urls.txt", "-d", "out", "-j", "50", "-x", "4", "--no-sync")
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertEqual(files(in: "out").count, count, "\(files(in: "out"))")
        for index in 0..<count {
            XCTAssertTrue(holdsGenerated("out/f\(index)", size: size, seed: UInt64(100 + index)), "f\(index) is whole")
        }
    }

    /// By default, downloads whose bytes are in wait for the disk with their `.part` open, beyond the
    /// `-j` that transfer: with few descriptors, their number is sized to what is left, and every file of
    /// a long list of small ones arrives whole, with no "Too many open files".
    func testFilesWaitingForTheDiskStayWithinFewFileDescriptors() async throws {
        let count = 300
        for index in 0..<count { serveGenerated("/s\(index)", size: 3_000, seed: UInt64(400 + index)) }
        try writeList((0..<count).map { "\(server.url("/s\($0)"))" }.joined(separator: "\n") + "\n")
        let command = try RunningCommand(["urls.txt", "-d", "out", "-j", "50"], in: work, setup: "ulimit -n 96")
        let finished = await command.wait(timeout: 180)
        let output = try XCTUnwrap(finished, "yxdownload hung with 96 descriptors")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertFalse(output.stderr.contains("Too many open files"), output.stderr)
        XCTAssertEqual(files(in: "out").count, count)
        for index in 0..<count {
            XCTAssertTrue(holdsGenerated("out/s\(index)", size: 3_000, seed: UInt64(400 + index)), "s\(index) is whole")
        }
    }
}
