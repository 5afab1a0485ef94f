import Foundation
import Synchronization
import XCTest
@_spi(YXQueueInternals) import YXQueue
import YXTestServer

@testable import YXDownload

/// A fresh download's `.part` without a name (Linux `O_TMPFILE`, see `DownloadSession+UnnamedPart.swift`):
/// nothing in the folder until the file is whole or worth resuming, and every promise of a named `.part`
/// kept.
final class UnnamedPartTests: DownloadTestCase {
    override func setUp() async throws {
        try await super.setUp()
        try XCTSkipUnless(DownloadSession.canNameUnnamedFiles, "no O_TMPFILE with /proc here: .part files are named")
    }

    private func freshJob(_ path: String, file: String, checksum: Checksum? = nil, options: DownloadOptions? = nil)
        -> DownloadJob
    {
        DownloadJob(
            url: server.url(path), toPath: directory.appendingPathComponent(file).path, checksum: checksum,
            options: options ?? fastOptions(), engine: engine, callbackQueue: .global(), destinationIsFresh: true)
    }

    /// The mechanism itself, without timing: after `prepare` the folder is empty; saving the resume state
    /// names the file `NAME.part`.
    func testAFreshPartHasNoNameUntilItsStateIsSaved() throws {
        let session = makeSession("s.bin", destinationIsFresh: true)
        _ = try session.prepare()
        XCTAssertTrue(session.state.withLock { $0.isUnnamed })
        XCTAssertEqual(files(), [], "nothing in the folder yet")
        let bytes = [UInt8](repeating: 7, count: 1000)
        XCTAssertNil(bytes.withUnsafeBytes { session.write($0, segment: 0) })
        XCTAssertEqual(files(), [])
        session.persist()
        XCTAssertFalse(session.state.withLock { $0.isUnnamed })
        // (Without a response there is no validator for a mark on the file: the sidecar holds the state.)
        XCTAssertEqual(files().filter { !$0.hasSuffix(".meta") }, ["s.bin.part"])
        XCTAssertEqual(try Data(contentsOf: directory.appendingPathComponent("s.bin.part")), Data(bytes))
        session.end()
    }

    /// Naming an unnamed file by its descriptor, and through `/proc/self/fd` where the first way is
    /// refused (as Linux before 6.10 refuses it to an unprivileged process, with `ENOENT`): the file gets
    /// its name, a refusal is remembered, and a name that is taken or a folder that is not there fail
    /// with their own error without being taken for a refusal. The first way is given by the test, so
    /// this holds on any kernel and as any user.
    func testAnUnnamedFileIsNamedEitherWayAndARefusalIsRemembered() throws {
        try Data("someone else's".utf8).write(to: directory.appendingPathComponent("taken"))
        var refusals = 0
        let refusing: (Int32, UnsafePointer<CChar>) -> Int32 = { _, _ in
            refusals += 1
            errno = ENOENT
            return -1
        }

        func unnamedFile(_ byte: UInt8) throws -> (DownloadSession, Int32) {
            let session = makeSession("unused-\(byte)", destinationIsFresh: true)
            _ = try session.prepare()
            let fd = session.state.withLock { $0.fd }
            XCTAssertNil([UInt8](repeating: byte, count: 100).withUnsafeBytes { session.write($0, segment: 0) })
            return (session, fd)
        }
        func link(_ fd: Int32, _ name: String, _ refused: borrowing Atomic<Bool>) -> (result: Int32, errno: Int32) {
            errno = 0
            let result = directory.appendingPathComponent(name).path.withCString {
                DownloadSession.linkUnnamed(fd, to: $0, refused: refused, byDescriptor: refusing)
            }
            return (result, errno)
        }

        // Refused: named through /proc, and the refusal remembered.
        let refused = Atomic<Bool>(false)
        let (first, firstFD) = try unnamedFile(1)
        XCTAssertEqual(link(firstFD, "taken", refused).errno, EEXIST, "a taken name is not a refusal")
        XCTAssertFalse(refused.load(ordering: .relaxed))
        XCTAssertEqual(link(firstFD, "missing/a.bin", refused).errno, ENOENT, "nor a missing folder")
        XCTAssertFalse(refused.load(ordering: .relaxed))
        XCTAssertEqual(refusals, 2)
        XCTAssertEqual(link(firstFD, "a.bin", refused).result, 0)
        XCTAssertTrue(refused.load(ordering: .relaxed))
        XCTAssertEqual(refusals, 3)
        first.end()

        // Remembered: the next file goes through /proc at once.
        let (second, secondFD) = try unnamedFile(2)
        XCTAssertEqual(link(secondFD, "b.bin", refused).result, 0)
        XCTAssertEqual(refusals, 3, "not tried again")
        XCTAssertEqual(link(secondFD, "taken", refused).errno, EEXIST)
        second.end()

        XCTAssertEqual(try Data(contentsOf: directory.appendingPathComponent("a.bin")), Data(repeating: 1, count: 100))
        XCTAssertEqual(try Data(contentsOf: directory.appendingPathComponent("b.bin")), Data(repeating: 2, count: 100))
        XCTAssertEqual(try Data(contentsOf: directory.appendingPathComponent("taken")), Data("someone else's".utf8))

        // By the descriptor, where this kernel allows it to this process (Linux 6.10 and later, or root).
        let (third, thirdFD) = try unnamedFile(3)
        let byDescriptor = directory.appendingPathComponent("c.bin").path.withCString {
            DownloadSession.linkByDescriptor(thirdFD, to: $0)
        }
        if byDescriptor == 0 {
            XCTAssertEqual(try Data(contentsOf: directory.appendingPathComponent("c.bin")), Data(repeating: 3, count: 100))
        } else {
            XCTAssertEqual(errno, ENOENT, "a refusal is ENOENT")
        }
        third.end()
    }

    /// Closed without a name (a job that ended before its state was ever saved): nothing is left.
    func testAnUnnamedPartLeavesNothingWhenClosed() throws {
        let session = makeSession("gone.bin", destinationIsFresh: true)
        _ = try session.prepare()
        let bytes = [UInt8](repeating: 1, count: 10)
        XCTAssertNil(bytes.withUnsafeBytes { session.write($0, segment: 0) })
        session.end()
        XCTAssertTrue(session.isClosed)
        XCTAssertEqual(files(), [])
    }

    func testASmallFreshFileGetsItsFinalNameWhole() async throws {
        server.serve("/f.bin", Resource(.generated(size: 50_000, seed: 11)))
        let result = try await run(freshJob("/f.bin", file: "f.bin")).get()
        XCTAssertEqual(result.outcome, .downloaded)
        XCTAssertEqual(try sha256(of: result.file), GeneratedContent.sha256(size: 50_000, seed: 11))
        XCTAssertEqual(files(), ["f.bin"])
        // The same mode as a file made with `open(O_CREAT, 0644)` under this process's umask.
        let reference = directory.appendingPathComponent("reference")
        close(open(reference.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644))
        XCTAssertEqual(try mode(of: result.file), try mode(of: reference))
    }

    /// A failure after some bytes names the `.part` and saves its state, so the next run resumes it.
    func testAFailedFreshDownloadKeepsAResumablePart() async throws {
        let size: Int64 = 300_000
        server.serve("/r.bin", Resource(.generated(size: size, seed: 12), etag: "v1", failures: [.dropAfter(bytes: 100_000)]))
        var noRetry = fastOptions(retries: 0)
        noRetry.computeSHA256 = false
        _ = downloadError(await run(freshJob("/r.bin", file: "r.bin", options: noRetry)))
        assertResumableOneStream("r.bin")

        server.serve("/r.bin", Resource(.generated(size: size, seed: 12), etag: "v1"))
        let result = try await run(makeJob("/r.bin", options: noRetry)).get()
        XCTAssertEqual(result.resumedFrom, 100_000)
        XCTAssertEqual(server.requests(to: "/r.bin").last?.header("Range"), "bytes=100000-")
        XCTAssertEqual(try sha256(of: result.file), GeneratedContent.sha256(size: size, seed: 12))
        XCTAssertEqual(files(), ["r.bin"])
    }

    /// The checksum is computed from the unnamed file (read through `/proc/self/fd`); a mismatch leaves
    /// nothing behind.
    func testTheChecksumOfAnUnnamedPartIsCheckedAndAMismatchLeavesNothing() async throws {
        server.serve("/c.bin", Resource(.generated(size: 70_000, seed: 13)))
        let digest = GeneratedContent.sha256(size: 70_000, seed: 13)
        let good = try await run(freshJob("/c.bin", file: "c.bin", checksum: Checksum(algorithm: .sha256, hex: digest))).get()
        XCTAssertEqual(good.sha256, digest)

        let wrong = Checksum(algorithm: .sha256, hex: String(repeating: "0", count: 64))
        let error = downloadError(await run(freshJob("/c.bin", file: "bad.bin", checksum: wrong)))
        XCTAssertEqual(error?.kind, .checksumMismatch)
        XCTAssertEqual(files(), ["c.bin"])
    }

    /// The hint said the final name was free, but a file has it: it is replaced whole, through `NAME.part`
    /// and a rename, as with a named `.part`.
    func testAFileThatTookTheFinalNameMeanwhileIsReplacedWhole() async throws {
        server.serve("/o.bin", Resource(.generated(size: 40_000, seed: 14)))
        try Data("someone else's bytes".utf8).write(to: directory.appendingPathComponent("o.bin"))
        let result = try await run(freshJob("/o.bin", file: "o.bin")).get()
        XCTAssertEqual(try sha256(of: result.file), GeneratedContent.sha256(size: 40_000, seed: 14))
        XCTAssertEqual(files(), ["o.bin"])
    }

    private func mode(of file: URL) throws -> Int {
        try XCTUnwrap(FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? NSNumber).intValue
    }
}
