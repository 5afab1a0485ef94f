import Foundation
import XCTest
import YXQueue
import YXTestServer

@testable import YXDownload

/// A test case with a loopback server, a fresh transfer engine, a dispatcher and a temporary directory.
class DownloadTestCase: XCTestCase {
    var server: TestHTTPServer!
    var engine: TransferEngine!
    var dispatcher: Dispatcher!
    var directory: URL!

    override func setUp() async throws {
        server = try await TestHTTPServer.start()
        engine = TransferEngine()
        dispatcher = Dispatcher(name: name, queues: DownloadQueue.limits(transfers: 16))
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yxdownload-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// At most `transfers` transfers at once on the test's dispatcher.
    func limitTransfers(_ transfers: Int) {
        for (queue, limit) in DownloadQueue.limits(transfers: transfers) { dispatcher.setLimit(limit, for: queue) }
    }

    override func tearDown() async throws {
        dispatcher.cancelAll()
        await dispatcher.waitForAllJobs()
        engine.shutdown()
        try await server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Options for fast tests: short back-off.
    func fastOptions(connections: Int = 1, retries: Int = 5) -> DownloadOptions {
        var options = DownloadOptions()
        options.connections = connections
        options.retryPolicy = RetryPolicy(retries: retries, initialDelay: 0.05, maxDelay: 0.2, jitter: 0)
        options.computeSHA256 = true
        options.minimumSegmentSize = 64 * 1024
        return options
    }

    /// A download's session for `file` in the test folder, served at `/file`, as a job's attempt makes
    /// one (for tests of the session and its steps without a job).
    func makeSession(_ file: String, destinationIsFresh: Bool = false) -> DownloadSession {
        return DownloadSession(
            url: server.url("/\(file)"), final: FileLocation(url: directory.appendingPathComponent(file)), options: fastOptions(),
            checksum: nil, engine: engine, destinationIsFresh: destinationIsFresh)
    }

    func makeJob(
        _ path: String, file: String? = nil, checksum: Checksum? = nil, options: DownloadOptions? = nil
    ) -> DownloadJob {
        let destination = directory.appendingPathComponent(file ?? String(path.split(separator: "/").last ?? "index.html"))
        return DownloadJob(
            url: server.url(path), to: destination, checksum: checksum, options: options ?? fastOptions(),
            engine: engine)
    }

    /// Runs a job to its end; returns its result or error.
    func run(_ job: DownloadJob) async -> Result<DownloadResult, any Error> {
        do {
            let value = try await job.run(on: dispatcher)
            guard let result = value as? DownloadResult else { return .failure(CancellationError()) }
            return .success(result)
        } catch {
            return .failure(error)
        }
    }

    /// Waits, without blocking a thread, until `condition` holds (checked every 10 ms); fails the test
    /// and throws after `timeout` seconds.
    func waitUntil(
        timeout: Double = 30, _ what: String, file: StaticString = #filePath, line: UInt = #line,
        _ condition: () -> Bool
    ) async throws {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout * 1e9)
        while !condition() {
            if DispatchTime.now().uptimeNanoseconds > deadline {
                XCTFail("timed out after \(timeout) s waiting for \(what)", file: file, line: line)
                throw CancellationError()
            }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
    }

    func files(in directory: URL? = nil) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: (directory ?? self.directory).path)) ?? []).sorted()
    }

    /// Whether the test folder's file system keeps extended attributes, so one stream's resume state is
    /// a mark on its `.part` (else it is the sidecar `NAME.part.meta`).
    var folderKeepsMarks: Bool {
        let probe = directory.appendingPathComponent(".mark-probe")
        let fd = open(probe.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return false }
        defer {
            close(fd)
            unlink(probe.path)
        }
        return ResumeMark.write("probe", to: fd)
    }

    /// What a stopped one-stream download leaves for `name`: the `.part` with its mark, or with a sidecar
    /// where the file system keeps no extended attributes.
    func assertResumableOneStream(_ name: String, file: StaticString = #filePath, line: UInt = #line) {
        if folderKeepsMarks {
            XCTAssertEqual(files(), [name + ".part"], "one stream keeps its resume state on the .part", file: file, line: line)
            XCTAssertNotNil(resumeMark(of: name + ".part"), file: file, line: line)
        } else {
            XCTAssertEqual(files(), [name + ".part", name + ".part.meta"], file: file, line: line)
        }
    }

    /// The resume mark (``ResumeMark``) of the file `name` in the test folder, if it has one.
    func resumeMark(of name: String) -> String? {
        let fd = open(directory.appendingPathComponent(name).path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return ResumeMark.read(from: fd)
    }

    func sha256(of url: URL) throws -> String {
        try MultiHasher.digests(ofFileAt: url.path, algorithms: [.sha256])[.sha256] ?? ""
    }

    func downloadError(_ result: Result<DownloadResult, any Error>, file: StaticString = #filePath, line: UInt = #line)
        -> DownloadError?
    {
        switch result {
        case .success(let value):
            XCTFail("expected a failure, got \(value)", file: file, line: line)
            return nil
        case .failure(let error):
            guard let error = error as? DownloadError else {
                XCTFail("expected a DownloadError, got \(error)", file: file, line: line)
                return nil
            }
            return error
        }
    }
}
