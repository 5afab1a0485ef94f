import Foundation
import XCTest
@_spi(YXQueueInternals) import YXQueue
import YXTestServer

@testable import YXDownload

final class DownloadCorrectnessTests: DownloadTestCase {
    func testBytesAreCorrectFromZeroBytesTo64MiBSingleAndSegmented() async throws {
        let sizes: [Int64] = [0, 1, 1000, 65_536, 1_000_003, 64 << 20]
        for (index, size) in sizes.enumerated() {
            server.serve("/files/f\(index).bin", Resource(.generated(size: size, seed: UInt64(index) + 1), etag: "e\(index)"))
            for connections in [1, 8] {
                let job = makeJob("/files/f\(index).bin", file: "f\(index)-x\(connections).bin", options: fastOptions(connections: connections))
                let result = try await run(job).get()
                let expected = GeneratedContent.sha256(size: size, seed: UInt64(index) + 1)
                XCTAssertEqual(result.sha256, expected, "size \(size) x\(connections)")
                XCTAssertEqual(try sha256(of: result.file), expected, "size \(size) x\(connections) on disk")
                XCTAssertEqual(result.bytes, size)
                XCTAssertEqual(result.outcome, .downloaded)
            }
        }
        XCTAssertFalse(files().contains { $0.hasSuffix(".part") || $0.hasSuffix(".meta") }, "\(files())")
        // Segmented downloads of large files really used several ranged requests.
        let ranged = server.requests(to: "/files/f5.bin").filter { $0.header("Range") != nil }
        XCTAssertGreaterThanOrEqual(ranged.count, 8)
    }

    func testChecksumIsVerified() async throws {
        server.serve("/files/ok.bin", Resource(.generated(size: 300_000, seed: 9)))
        let digest = GeneratedContent.sha256(size: 300_000, seed: 9)
        let good = makeJob("/files/ok.bin", checksum: Checksum(algorithm: .sha256, hex: digest))
        let result = try await run(good).get()
        XCTAssertEqual(result.sha256, digest)

        let wrong = makeJob("/files/ok.bin", file: "bad.bin", checksum: Checksum(algorithm: .sha256, hex: String(repeating: "0", count: 64)))
        let error = downloadError(await run(wrong))
        XCTAssertEqual(error?.kind, .checksumMismatch)
        XCTAssertFalse(error?.isTransient ?? true)
        XCTAssertFalse(files().contains("bad.bin"), "a mismatch never leaves a file under the final name")
        XCTAssertFalse(files().contains("bad.bin.part"), "a mismatch deletes the .part: its bytes are known bad")
    }

    func testEveryChecksumAlgorithmAndTheAria2Syntax() async throws {
        server.serve("/hello.txt", Resource(.bytes(Data("hello, yxdownload\n".utf8))))
        // Digests computed independently (Python's hashlib).
        let expected = [
            "md5=007be498481c3cd0472d491d1f441b5f",
            "sha-1=bdafe16434fe29553024bd5b5ded10ecf1445db2",
            "sha-256=e553d0fc963f719f4a6f13820ea805404a7f9242007dc9e233ca1be12e91f0e1",
            "sha-512=77554da40287830e652f328fcb5ee6915175cce70e2f2ea1bb0b03fbbd5aab2a11f941b75617e2fba7805b7b645617fb54a896de0e3940ffdc57e73de4f86031",
        ]
        for (index, text) in expected.enumerated() {
            let checksum = try XCTUnwrap(Checksum(parsing: text))
            let result = try await run(makeJob("/hello.txt", file: "hello-\(index).txt", checksum: checksum)).get()
            XCTAssertEqual(result.outcome, .downloaded, text)
        }
        XCTAssertEqual(Checksum(parsing: "SHA256=E553D0FC963F719F4A6F13820EA805404A7F9242007DC9E233CA1BE12E91F0E1")?.algorithm, .sha256)
        XCTAssertNil(Checksum(parsing: "sha-256=abc"), "a digest of the wrong length is refused")
        XCTAssertNil(Checksum(parsing: "crc32=00000000"))
    }

    func testChunkedBodyOfUnknownLength() async throws {
        server.serve("/chunked.bin", Resource(.generated(size: 500_000, seed: 4), chunked: true))
        let result = try await run(makeJob("/chunked.bin")).get()
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: 500_000, seed: 4))
    }

    func testExistingFileIsSkippedWithoutRequestUnlessOverwrite() async throws {
        server.serve("/files/a.bin", Resource(.generated(size: 10_000, seed: 2)))
        let existing = directory.appendingPathComponent("a.bin")
        try Data("old".utf8).write(to: existing)
        let skipped = try await run(makeJob("/files/a.bin")).get()
        XCTAssertEqual(skipped.outcome, .skippedExisting)
        XCTAssertEqual(server.requests(to: "/files/a.bin").count, 0, "no request for a file that exists")
        XCTAssertEqual(try Data(contentsOf: existing), Data("old".utf8))

        var options = fastOptions()
        options.overwrite = true
        let replaced = try await run(makeJob("/files/a.bin", options: options)).get()
        XCTAssertEqual(replaced.outcome, .downloaded)
        XCTAssertEqual(try sha256(of: existing), GeneratedContent.sha256(size: 10_000, seed: 2))
    }

    func testHeadersAndUserAgentAreSent() async throws {
        server.serve("/h.bin", Resource(.bytes(Data("x".utf8))))
        var options = fastOptions()
        options.headers = ["X-Token: abc"]
        options.userAgent = "tester/1"
        _ = try await run(makeJob("/h.bin", options: options)).get()
        let request = try XCTUnwrap(server.requests(to: "/h.bin").first)
        XCTAssertEqual(request.header("X-Token"), "abc")
        XCTAssertEqual(request.header("User-Agent"), "tester/1")
    }

    func testProgressSnapshotAndJobProgress() async throws {
        server.serve("/big.bin", Resource(.generated(size: 4 << 20, seed: 3), bytesPerSecond: 16 << 20))
        let job = makeJob("/big.bin")
        let seen = Log<Double>()
        let token = job.onProgress { _, value in seen.append(value) }
        _ = try await run(job).get()
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(job.progressSnapshot.bytes, 4 << 20)
        XCTAssertEqual(job.progressSnapshot.total, 4 << 20)
        let values = seen.all
        XCTAssertEqual(values.last, 1)
        XCTAssertTrue(values.contains { $0 > 0 && $0 < 1 }, "intermediate progress: \(values)")
        XCTAssertEqual(values, values.sorted())
        _ = token
    }

    func testSegmentedProgressIsIntermediateAndMonotonic() async throws {
        // A validator: without one, a download is one stream whatever -x says.
        server.serve("/seg.bin", Resource(.generated(size: 4 << 20, seed: 4), etag: "s", bytesPerSecond: 16 << 20))
        var options = DownloadOptions()
        options.connections = 4
        let job = makeJob("/seg.bin", options: options)
        let seen = Log<Double>()
        let token = job.onProgress { _, value in seen.append(value) }
        _ = try await run(job).get()
        await dispatcher.waitForAllJobs()
        let values = seen.all
        XCTAssertEqual(values.last, 1)
        XCTAssertTrue(values.contains { $0 > 0 && $0 < 1 }, "intermediate progress: \(values)")
        XCTAssertEqual(values, values.sorted())
        XCTAssertGreaterThanOrEqual(server.requests(to: "/seg.bin").count, 5, "a probe and four parts")
        _ = token
    }
}

/// A thread-safe list.
final class Log<T: Sendable>: Sendable {
    private let items = Locked<[T]>([])
    func append(_ item: T) { items.withLock { $0.append(item) } }
    var all: [T] { items.withLock { $0 } }
}
