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
        dispatcher = Dispatcher(name: name)
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yxdownload-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
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
        options.retry = RetryPolicy(retries: retries, initialDelay: 0.05, maxDelay: 0.2, jitter: 0)
        options.computeSHA256 = true
        options.minimumSegmentSize = 64 * 1024
        return options
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
            guard let result = value as? DownloadResult else { return .failure(JobError.canceled) }
            return .success(result)
        } catch {
            return .failure(error)
        }
    }

    func files(in directory: URL? = nil) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: (directory ?? self.directory).path)) ?? []).sorted()
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
