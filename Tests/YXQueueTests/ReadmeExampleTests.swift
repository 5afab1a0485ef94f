import Foundation
import XCTest
import YXQueue

// The README's quick start 3, verbatim (DocumentationTests checks that every line of its Swift blocks is
// here, in order), compiled and run.

/// A report on a text file: its words and its lines.
struct TextReport: JobDefinition {
    static let name = "text-report"      // stable: what logs, metrics and stores see
    let file: URL

    var work: JobWork<String> {
        let text = JobStep(on: "io") { _ in try String(contentsOf: file, encoding: .utf8) }
        let words = JobStep(on: "cpu", after: text) { text, _ in
            text.split(whereSeparator: { $0 == " " || $0 == "\n" }).count
        }
        let lines = JobStep(on: "cpu", after: text) { text, _ in text.split(separator: "\n").count }
        let report = JobStep(on: "cpu", after: words, lines) { words, lines, _ in
            "\(file.lastPathComponent): \(words) words, \(lines) lines"
        }
        return JobWork(report)
    }
}

final class ReadmeExampleTests: XCTestCase {
    func testTheReadmeExampleRuns() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let previous = FileManager.default.currentDirectoryPath
        _ = FileManager.default.changeCurrentDirectoryPath(folder.path)
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        try "the quick brown fox\njumps over the lazy dog\n".write(
            to: folder.appendingPathComponent("notes.txt"), atomically: true, encoding: .utf8)

        let dispatcher = Dispatcher(name: "reports", queues: ["io": 4, "cpu": 2])
        let notes = URL(fileURLWithPath: "notes.txt")

        // 1. async/await: the output is a String, no cast; cancelling the task cancels the job.
        let report = try await dispatcher.run(TextReport(file: notes))
        XCTAssertEqual(report, "notes.txt: 9 words, 2 lines")

        // 2. A handle: typed events, progress, cancel.
        let handle = dispatcher.start(TextReport(file: notes))
        var seen: [String] = []
        for await event in handle.events {
            print(event)                      // started, progress(…), finished("notes.txt: 9 words, 2 lines")
            if case .finished(let output) = event { seen.append(output) }
        }
        XCTAssertEqual(seen, ["notes.txt: 9 words, 2 lines"])

        // 3. Delegates and closures, on the class-layer Job behind the handle: add them, then start.
        final class Printer: JobDelegate {    // every method is optional; held weakly
            func job(_ job: Job, didFailWith error: any Error) { print("\(job.name) failed: \(error)") }
        }
        let printer = Printer()
        let watched = JobHandle(TextReport(file: notes))
        watched.job.addDelegate(printer)
        let token = watched.job.onFinish { _, _ in print("closure: done") }   // released token: no more calls
        watched.start(on: dispatcher)
        print(try await watched.value)
        XCTAssertEqual(watched.output, report)
        _ = token

        let checksum = GraphJob(name: "checksum") { _ in
            let read = TaskOperation(queue: "io") { _ in try Data(contentsOf: notes) }
            let sum = TaskOperation(queue: "cpu") { _ in (read.output ?? Data()).reduce(0) { $0 &+ Int($1) } }
            sum.addPrerequisite(read)         // `sum` enters its queue only after `read` finished
            return [read, sum]
        }
        checksum.addDelegate(printer)
        let total = try await checksum.run(on: dispatcher)   // the job's result: (any Sendable)?
        let bytes = try Data(contentsOf: notes)
        XCTAssertEqual(total as? Int, bytes.reduce(0) { $0 &+ Int($1) })
        XCTAssertEqual(checksum.name, "checksum")
    }
}
