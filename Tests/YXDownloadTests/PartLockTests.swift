import Foundation
import XCTest

@testable import YXDownload

#if canImport(Glibc)
import Glibc
#endif

/// The lock on a `.part` (``PartLock``); another process holding it is tested with two real runs
/// (`InterruptionTests`, `DurableCommandTests`).
final class PartLockTests: DownloadTestCase {
    /// A `.part` renamed between its open and its lock (another run finished it in that moment) is not
    /// taken for the `.part`: its name now leads elsewhere (found by a review: the finished file was then
    /// emptied and written again).
    func testAFileThatLostThePartsNameBeforeTheLockIsNotUsed() throws {
        let session = makeSession("s.bin")
        let part = directory.appendingPathComponent("s.bin.part").path
        try Data("whole".utf8).write(to: URL(fileURLWithPath: part))
        let kept = open(part, O_RDWR)
        XCTAssertGreaterThanOrEqual(kept, 0)
        XCTAssertNoThrow(try session.lockPart(kept), "the name still leads to the file")
        close(kept)

        let fd = open(part, O_RDWR)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(rename(part, directory.appendingPathComponent("s.bin").path), 0)
        XCTAssertThrowsError(try session.lockPart(fd)) { error in
            XCTAssertTrue((error as? DownloadError)?.message.hasSuffix(DownloadError.partInUseReason) == true, "\(error)")
        }
        XCTAssertEqual(try Data(contentsOf: directory.appendingPathComponent("s.bin")), Data("whole".utf8))
    }

    /// This process's own lock is not another's: a worker never waits for itself.
    func testThisProcesssOwnLockIsNotAnothers() throws {
        let part = directory.appendingPathComponent("t.bin.part").path
        XCTAssertFalse(PartLock.isHeldByAnotherProcess(at: part), "no file")
        try Data("x".utf8).write(to: URL(fileURLWithPath: part))
        let fd = open(part, O_RDWR)
        defer { close(fd) }
        XCTAssertNil(PartLock.lock(fd))
        XCTAssertFalse(PartLock.isHeldByAnotherProcess(at: part))
    }
}
