import Foundation
import Logging
import XCTest
@_spi(YXQueueInternals) import YXQueue

// The code of Sources/YXQueue/YXQueue.docc/GettingStarted.md, verbatim (DocumentationTests checks that
// every Swift block of the article appears here), compiled and run.

/// Counts the words of a text file.
struct WordCount: JobDefinition {
    static let name = "word-count"
    let file: URL

    var work: JobWork<Int> {
        .run(on: "cpu") { _ in
            let text = try String(contentsOf: file, encoding: .utf8)
            return text.split(whereSeparator: { $0 == " " || $0 == "\n" }).count
        }
    }
}

/// Reads a file once, counts its words and its lines side by side, then writes a summary.
struct FileReport: JobDefinition {
    let file: URL

    var work: JobWork<String> {
        let text = JobStep(on: "io") { _ in try String(contentsOf: file, encoding: .utf8) }
        let words = JobStep(on: "cpu", after: text) { text, _ in
            text.split(whereSeparator: { $0 == " " || $0 == "\n" }).count
        }
        let lines = JobStep(on: "cpu", after: text) { text, _ in text.split(separator: "\n").count }
        let summary = JobStep(on: "cpu", after: words, lines) { words, lines, _ in
            "\(file.lastPathComponent): \(words) words, \(lines) lines"
        }
        return JobWork(summary)
    }
}

struct FlakyUpload: JobDefinition {
    let file: URL

    var retryPolicy: RetryPolicy { RetryPolicy(retries: 3, initialDelay: 0.5, scope: .allErrors) }
    var deadline: Duration? { .seconds(30) }

    var work: JobWork<Int> {
        .run(on: "io") { context in
            let size = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int ?? 0
            context.reportProgress(1)
            return size
        }
    }
}

final class Printer: JobDelegate {                       // every method is optional
    func job(_ job: Job, didFailWith error: any Error) { print("\(job.name) failed: \(error)") }
}

final class GettingStartedTests: XCTestCase {
    private var previousDirectory = ""
    private var folder: URL!

    override func setUpWithError() throws {
        // The article's paths are relative ("notes.txt"): run in a folder of our own.
        previousDirectory = FileManager.default.currentDirectoryPath
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("getting-started-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        _ = FileManager.default.changeCurrentDirectoryPath(folder.path)
        try "the quick brown fox\njumps over the lazy dog\n".write(
            to: folder.appendingPathComponent("notes.txt"), atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws {
        _ = FileManager.default.changeCurrentDirectoryPath(previousDirectory)
        try? FileManager.default.removeItem(at: folder)
    }

    func testTheArticleRuns() async throws {
        let dispatcher = Dispatcher(name: "reports", queues: ["io": 4, "cpu": 2])
        let notes = URL(fileURLWithPath: "notes.txt")

        let words = try await dispatcher.run(WordCount(file: notes))
        print("\(words) words")               // an Int: the output is typed, no cast
        XCTAssertEqual(words, 9)

        let handle = dispatcher.start(FileReport(file: notes))
        var summaries: [String] = []
        for await event in handle.events {
            switch event {
            case .progress(let fraction): print("\(Int(fraction * 100)) %")
            case .finished(let summary): print(summary)   // a String
                summaries.append(summary)
            case .failed(let error): print("failed: \(error)")
            default: break
            }
        }
        XCTAssertEqual(summaries, ["notes.txt: 9 words, 2 lines"])

        let printer = Printer()                                  // held weakly by the job: keep it
        let watched = JobHandle(FileReport(file: notes))
        watched.job.addDelegate(printer)
        let token = watched.job.onProgress { _, fraction in print(fraction) }   // released: stops
        watched.start(on: dispatcher)
        print(try await watched.value)
        token.invalidate()
        XCTAssertEqual(watched.output, "notes.txt: 9 words, 2 lines")

        let slow = dispatcher.start(FileReport(file: notes))
        slow.cancel()
        var sawCancel = false
        do {
            _ = try await slow.value
        } catch is CancellationError {
            print("canceled")
            sawCancel = true
        }
        XCTAssertTrue(sawCancel || slow.state == .finished, "a job canceled right after start")

        let size = try await dispatcher.run(FlakyUpload(file: notes))
        XCTAssertEqual(size, 44)

        let bounded = Dispatcher(name: "bulk", queues: ["cpu": 2], maxPendingJobs: 100)
        for index in 0..<1_000 {
            let file = URL(fileURLWithPath: "notes-\(index).txt")
            try await bounded.submit(WordCount(file: file))
        }
        await bounded.waitForAllJobs()

        let events = DirectQueue(label: "reports.events")
        let direct = Dispatcher(name: "direct", queues: ["cpu": 2])
        let endCount = Locked(0)
        let ends = direct.observe(.terminal) { job, event in
            print("\(job.name)#\(job.tag): \(event)")  // on the thread that ended the job
            dispatchPrecondition(condition: .onQueue(events.queue))
            endCount.withLock { $0 += 1 }
        }
        for index in 0..<10 {
            direct.start(WordCount(file: notes), tag: index, callbackQueue: events.queue)
        }
        await direct.waitForAllJobs()
        ends.invalidate()
        XCTAssertEqual(endCount.withLock { $0 }, 10)

        var logger = Logger(label: "reports")
        logger.logLevel = .debug
        let observed = Dispatcher(name: "observed", queues: ["cpu": 2], logger: logger)
        observed.setLimit(4, for: "cpu")
        let monitor = observed.observe(.failed) { job, event in
            if case .failed(let error) = event { print("\(job.name) failed: \(error)") }
        }
        _ = try await observed.run(WordCount(file: notes))
        monitor.invalidate()
        XCTAssertEqual(observed.limit(for: "cpu"), 4)

        let classic = GraphJob(name: "word-count") { _ in
            let read = TaskOperation(queue: "io") { _ in try String(contentsOf: notes, encoding: .utf8) }
            let count = TaskOperation(queue: "cpu") { operation in
                operation.reportProgress(1)
                return (read.output ?? "").split(whereSeparator: { $0 == " " || $0 == "\n" }).count
            }
            count.addPrerequisite(read)   // `count` enters its queue only after `read` finished
            return [read, count]
        }
        classic.addDelegate(printer)
        let result = try await classic.run(on: dispatcher)   // the job's result: (any Sendable)?
        print(result ?? "none")
        XCTAssertEqual(result as? Int, 9)
    }
}
