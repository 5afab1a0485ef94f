import Foundation
import XCTest
import YXJobStore
import YXJobStoreSQLite
import YXQueue

// The README's "Durable jobs" example, verbatim (DocumentationTests checks that every line of its Swift
// block is here, in order), compiled and run.

/// The words of a text file, counted by a worker: read on "io", counted on "cpu".
struct CountWords: JobDefinition, Codable {
    static let name = "count-words"      // what the store keeps: the Swift type may be renamed
    let path: String

    var work: JobWork<Int> {
        let text = JobStep(on: "io") { _ in try String(contentsOfFile: path, encoding: .utf8) }
        let count = JobStep(on: "cpu", after: text) { text, _ in
            text.split(whereSeparator: { $0 == " " || $0 == "\n" }).count
        }
        return JobWork(count)
    }
}

final class ReadmeDurableJobsTests: XCTestCase {
    func testTheReadmeExampleRuns() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("readme-durable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let previous = FileManager.default.currentDirectoryPath
        _ = FileManager.default.changeCurrentDirectoryPath(folder.path)
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        try "the quick brown fox\njumps over the lazy dog\n".write(
            to: folder.appendingPathComponent("notes.txt"), atomically: true, encoding: .utf8)

        // Any process on this machine: store the job (it is on disk when the call returns).
        let store = try await SQLiteJobStore.open(path: "jobs.sqlite")
        let id = try await store.enqueue(CountWords(path: "notes.txt")).id

        // A worker process (as many as you like): claims jobs and runs them on a dispatcher.
        let dispatcher = Dispatcher(name: "worker", queues: ["io": 4, "cpu": 2])
        var registry = JobRegistry()
        registry.register(CountWords.self, on: dispatcher)
        var configuration = JobWorker.Configuration()
        configuration.exitWhenIdle = true    // a server runs it in a ServiceGroup instead, until SIGTERM
        try await JobWorker(store: store, runner: registry, configuration: configuration).run()

        // Any process: the job's state, progress and typed result.
        if let record = try await store.job(id) {
            print(record.state, try record.decodedResult(as: Int.self) ?? 0)   // succeeded 9
        }
        try await store.close()

        // What the example printed, checked on another connection to the same file.
        let reader = try await SQLiteJobStore.open(path: folder.appendingPathComponent("jobs.sqlite").path)
        let record = try await reader.job(id)
        try await reader.close()
        XCTAssertEqual(record?.state, .succeeded)
        XCTAssertEqual(record?.name, "count-words")
        XCTAssertEqual(try record?.decodedResult(as: Int.self), 9)
        XCTAssertEqual(record?.progress.fraction, 1)
        XCTAssertEqual(try record.map { try JSONDecoder().decode(CountWords.self, from: $0.payload).path }, "notes.txt")
    }
}
