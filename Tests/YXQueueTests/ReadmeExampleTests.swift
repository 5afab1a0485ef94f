import Foundation
import XCTest
import YXQueue

// The README's example, compiled and run: a job of two dependent operations (count the words of a
// file, then summarize), with a delegate, a closure handler and the async form.

/// Counts the words of a text file, then writes a one-line summary.
final class WordCountJob: Job, @unchecked Sendable {
    let file: URL

    init(file: URL) {
        self.file = file
        super.init()
    }

    override class var managerType: JobManager.Type { WordCountManager.self }
}

final class WordCountManager: JobManager, @unchecked Sendable {
    static let io = OperationModel(type: "io", maxConcurrentOperationCount: 4)
    static let cpu = OperationModel(type: "cpu", maxConcurrentOperationCount: 2)

    override func makeOperations() -> [QueueOperation] {
        let file = (job as! WordCountJob).file
        let read = TaskOperation(model: Self.io) { _ in try String(contentsOf: file, encoding: .utf8) }
        let count = TaskOperation(model: Self.cpu) { operation in
            let text = read.result as? String ?? ""
            let words = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
            operation.reportProgress(1)
            return "\(file.lastPathComponent): \(words.count) words"
        }
        count.addPrerequisite(read)  // `count` enters its queue only after `read` finished
        return [read, count]
    }
}

final class PrintingDelegate: JobDelegate, @unchecked Sendable {
    let lines = NSLock()
    private var printed: [String] = []
    var all: [String] { lines.withLock { printed } }

    func job(_ job: Job, didFinishWith result: (any Sendable)?) {
        lines.withLock { printed.append("finished: \(result ?? "")") }
    }
    func job(_ job: Job, didFailWith error: any Error) {
        lines.withLock { printed.append("failed: \(error)") }
    }
}

final class ReadmeExampleTests: XCTestCase {
    func testTheReadmeExampleRuns() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID().uuidString).txt")
        try "the quick brown fox\njumps over the lazy dog\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let dispatcher = Dispatcher(name: "readme")

        // 1. Delegate form.
        let delegate = PrintingDelegate()
        let job = WordCountJob(file: file)
        job.addDelegate(delegate)
        dispatcher.add(job)

        // 2. Closure form (keep the token as long as you want the callbacks).
        let token = job.onFinish { _, result in print("closure:", result ?? "") }

        // 3. Async form.
        let summary = try await WordCountJob(file: file).run(on: dispatcher) as? String

        // 4. The event stream of one attempt, as the README prints it.
        let watched = WordCountJob(file: file)
        let events = watched.events
        dispatcher.add(watched)
        var seen: [String] = []
        for await event in events { seen.append(event.description) }
        XCTAssertEqual(seen, ["started", "progress(0.5)", "progress(1.0)", "finished"])

        await dispatcher.waitForAllJobs()
        XCTAssertEqual(summary, "\(file.lastPathComponent): 9 words")
        XCTAssertEqual(delegate.all, ["finished: \(file.lastPathComponent): 9 words"])
        _ = token
    }
}
