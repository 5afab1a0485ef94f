import Foundation
import XCTest
import YXQueue
import YXTestServer

@testable import YXDownload

/// A download holds its `.part` open only while it runs: jobs that ended (finished, failed, canceled,
/// dropped) and are still kept by the program hold no descriptor.
final class DescriptorLifetimeTests: DownloadTestCase {
    /// This process's open descriptors.
    private func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    /// Waits (without blocking a thread) until `condition` holds, for at most `timeout` seconds.
    private func eventually(timeout: Double = 20, _ condition: () -> Bool) async throws -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout * 1e9)
        while !condition() {
            if DispatchTime.now().uptimeNanoseconds > deadline { return false }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        return true
    }

    func testEndedJobsThatAreKeptHoldNoDescriptor() async throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/proc/self/fd"), "needs /proc/self/fd (Linux)")
        for index in 0..<400 {
            server.serve("/ok/\(index)", Resource(.generated(size: 3_000, seed: UInt64(index))))
        }
        server.serve("/missing", .status(404))
        server.serve("/cut", Resource(.generated(size: 200_000, seed: 1), etag: "c", failures: Array(repeating: .dropAfter(bytes: 50_000), count: 100)))
        server.serve("/slow", Resource(.generated(size: 50 << 20, seed: 2), etag: "s", bytesPerSecond: 64 * 1024))
        var options = fastOptions(retries: 0)
        options.computeSHA256 = false
        limitTransfers(8)
        var quick = options
        quick.syncBeforeRename = false  // the probe verifies and renames by itself
        var segmented = options
        segmented.connections = 4

        // Warm up: connections and threads exist before the count is taken.
        _ = try await run(makeJob("/ok/399", file: "warm", options: options)).get()
        let before = openDescriptors()

        var kept: [DownloadJob] = []
        for index in 0..<300 {
            kept.append(makeJob("/ok/\(index)", file: "ok\(index)", options: index.isMultiple(of: 2) ? options : quick))
        }
        for index in 0..<40 { kept.append(makeJob("/missing", file: "missing\(index)", options: options)) }
        for index in 0..<40 { kept.append(makeJob("/cut", file: "cut\(index)", options: index < 20 ? options : segmented)) }
        for job in kept { dispatcher.add(job) }
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(kept.filter { $0.state == .finished }.count, 300)
        XCTAssertEqual(kept.filter { $0.state == .failed }.count, 80)

        // Canceled and dropped while transferring.
        let stopped = (0..<20).map { makeJob("/slow", file: "slow\($0)", options: options) }
        for job in stopped { dispatcher.add(job) }
        // Eight run at a time (the transfer limit); the others are canceled while they wait for a slot.
        let someStarted = try await eventually { stopped.filter { $0.progressSnapshot.bytes > 0 }.count >= 4 }
        XCTAssertTrue(someStarted, "the slow downloads began")
        for (index, job) in stopped.enumerated() {
            if index.isMultiple(of: 2) { job.cancel() } else { job.drop() }
        }
        await dispatcher.waitForAllJobs()
        kept += stopped
        XCTAssertEqual(kept.filter { $0.state == .canceled || $0.state == .dropped }.count, 20)

        // A canceled transfer lets go of its file as soon as the engine removed it: wait for that.
        let settled = try await eventually { openDescriptors() - before < 40 }
        XCTAssertTrue(
            settled,
            "\(kept.count) ended jobs are kept and \(openDescriptors() - before) more descriptors are open than before them")
        XCTAssertEqual(kept.count, 400)
    }
}
