import Foundation
import XCTest

@testable import YXDownload

/// `DiskSync` batches flushes: every caller is answered exactly once, concurrent callers share flushes.
final class DiskSyncTests: XCTestCase {
    func testEveryConcurrentCallerIsAnsweredOnce() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("disksync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let count = 200
        let fds: [Int32] = (0..<count).map { index in
            let fd = open(folder.appendingPathComponent("f\(index)").path, O_RDWR | O_CREAT, 0o644)
            XCTAssertGreaterThanOrEqual(fd, 0)
            XCTAssertEqual(write(fd, "x", 1), 1)
            return fd
        }
        defer { fds.forEach { close($0) } }
        let answers = (0..<count).map { _ in expectation(description: "answer") }
        let flushed = LockedCounter()
        let sync = DiskSync()
        DispatchQueue.concurrentPerform(iterations: count) { index in
            sync.sync(fds[index]) { ok in
                if ok { flushed.increment() }
                answers[index].fulfill()  // a second call would fail the test (over-fulfilled)
            }
        }
        wait(for: answers, timeout: 30)
        XCTAssertEqual(flushed.value, count)
    }

    /// A round of one file flushes the file alone (`fdatasync`, not the whole file system).
    func testALoneFileIsFlushedAndAnsweredOnce() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("disksync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fd = open(folder.appendingPathComponent("lone").path, O_RDWR | O_CREAT, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertEqual(write(fd, "lone", 4), 4)
        let answered = expectation(description: "answer")
        DiskSync().sync(fd) { ok in
            XCTAssertTrue(ok)
            answered.fulfill()
        }
        wait(for: [answered], timeout: 10)
        XCTAssertEqual(lseek(fd, 0, SEEK_END), 4)
    }

    /// Waiters are called back on a queue of their own, not on the flushing one: their renames and job
    /// ends never hold up the next flush.
    func testWaitersAreCalledBackOffTheFlushingQueue() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("disksync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fds: [Int32] = (0..<3).map { open(folder.appendingPathComponent("f\($0)").path, O_RDWR | O_CREAT, 0o644) }
        defer { fds.forEach { close($0) } }
        let answers = fds.map { _ in expectation(description: "answer") }
        let onCompletionQueue = LockedCounter()
        let sync = DiskSync()
        for (index, fd) in fds.enumerated() {
            XCTAssertGreaterThanOrEqual(fd, 0)
            sync.sync(fd) { ok in
                XCTAssertTrue(ok)
                if DispatchQueue.getSpecific(key: DiskSync.completionQueueKey) == true { onCompletionQueue.increment() }
                answers[index].fulfill()
            }
        }
        wait(for: answers, timeout: 10)
        XCTAssertEqual(onCompletionQueue.value, 3, "every waiter was called back on the completion queue")
    }

    func testABadDescriptorIsReportedNotFlushed() {
        let answered = expectation(description: "answer")
        let sync = DiskSync()
        sync.sync(-1) { ok in
            XCTAssertFalse(ok)
            answered.fulfill()
        }
        wait(for: [answered], timeout: 10)
    }
}

/// A thread-safe counter for callbacks from many threads.
private final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}
