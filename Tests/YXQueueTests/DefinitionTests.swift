import Dispatch
import Foundation
import InMemoryLogging
import Logging
import XCTest

@_spi(YXQueueInternals) @testable import YXQueue

/// A definition with one synchronous body.
private struct Square: JobDefinition {
    static let name = "square"
    let value: Int
    var work: JobWork<Int> { .run(on: "cpu") { _ in value * value } }
}

/// A definition whose body always throws.
private struct Fails: JobDefinition {
    var work: JobWork<Int> { .run(on: "cpu") { _ in throw TestFailure(code: 7) } }
}

/// A definition with one `async` body that reports progress.
private struct Countdown: JobDefinition {
    let from: Int
    var work: JobWork<String> {
        .run(on: "io") { context in
            for step in 1...from {
                try await Task.sleep(nanoseconds: 1_000_000)
                context.reportProgress(Double(step) / Double(from))
            }
            return "lift-off after \(from)"
        }
    }
}

/// A graph: a read, two transformations side by side, a join that takes both outputs.
private struct Report: JobDefinition {
    let words: [String]
    let log: Log<String>
    let probe: ConcurrencyProbe

    var work: JobWork<String> {
        let words = words
        let log = log
        let probe = probe
        let read = JobStep(on: "io") { _ in
            log.append("read")
            return words
        }
        let upper = JobStep(on: "cpu", after: read) { words, _ in
            probe.enter("cpu")
            defer { probe.leave("cpu") }
            log.append("upper")
            return words.map { $0.uppercased() }
        }
        let count = JobStep(on: "cpu", after: read) { words, _ in
            probe.enter("cpu")
            defer { probe.leave("cpu") }
            log.append("count")
            return words.count
        }
        let join = JobStep(on: "io", after: upper, count) { upper, count, _ in
            log.append("join")
            return "\(count): \(upper.joined(separator: " "))"
        }
        return JobWork(join)
    }
}

/// A step that reads the output of a step it does not wait for.
private struct Confused: JobDefinition {
    var work: JobWork<Int> {
        let stray = JobStep(on: "cpu") { _ in 1 }
        let reader = JobStep(on: "cpu") { context in try context.output(of: stray) }
        return JobWork(reader)
    }
}

/// Runs until canceled (noticed through the task).
private struct Forever: JobDefinition {
    let started: Gate
    var work: JobWork<Void> {
        .run(on: "io") { _ in
            started.open()
            while true { try await Task.sleep(nanoseconds: 5_000_000) }
        }
    }
}

/// A chain of `length` steps, each adding one to the output of the step before: a graph larger than
/// the steps a build searches (its places are hashed).
private struct Chain: JobDefinition {
    let length: Int
    var work: JobWork<Int> {
        var last = JobStep(on: "cpu") { _ in 0 }
        for _ in 1..<length {
            let before = last
            last = JobStep(on: "cpu", after: before) { value, _ in value + 1 }
        }
        return JobWork(last)
    }
}

/// A step that reports what its context says about the job, and logs.
private struct Introspective: JobDefinition {
    var work: JobWork<String> {
        .run(on: "cpu") { context in
            context.logger.info("inside")
            return "\(context.jobName) \(context.attempt)"
        }
    }
}

final class DefinitionTests: XCTestCase {
    /// Graphs of 1 to 12 steps in a chain (searched up to 8 steps, hashed past that): every step runs
    /// after the one before, and the job's output is the last step's.
    func testChainsShorterAndLongerThanTheSearchedGraphs() async throws {
        let dispatcher = Dispatcher(name: "chains", queues: ["cpu": 2])
        for length in [1, 2, StepBuild.searchedSteps, StepBuild.searchedSteps + 1, 12] {
            let output = try await dispatcher.run(Chain(length: length))
            XCTAssertEqual(output, length - 1, "\(length) steps")
        }
    }

    /// A definition without a name of its own is named after its type (made once per type), and its
    /// steps see that name, their attempt, and a logger with the job in its metadata.
    func testTheDefaultNameAndWhatAStepsContextSays() async throws {
        let handler = InMemoryLogHandler()
        let dispatcher = Dispatcher(name: "context", logger: Logger(label: "test", factory: { _ in handler }))
        XCTAssertEqual(Introspective.name, "Introspective")
        XCTAssertEqual(Introspective.name, String(describing: Introspective.self))
        let handle = dispatcher.start(Introspective())
        let output = try await handle.value
        XCTAssertEqual(output, "Introspective 1")
        XCTAssertEqual(handle.job.name, "Introspective")
        let inside = handler.entries.filter { $0.message.description == "inside" }
        XCTAssertEqual(inside.count, 1)
        XCTAssertEqual(inside.first?.metadata["job"], "Introspective")
        XCTAssertEqual(inside.first?.metadata["dispatcher"], "context")
    }

    func testABodyRunsAndItsOutputIsTyped() async throws {
        let dispatcher = Dispatcher(name: "definitions", queues: ["cpu": 2])
        let nine: Int = try await dispatcher.run(Square(value: 3))
        XCTAssertEqual(nine, 9)
        let handle = dispatcher.start(Square(value: 4))
        let sixteen: Int = try await handle.value
        XCTAssertEqual(sixteen, 16)
        XCTAssertEqual(handle.output, 16)
        XCTAssertEqual(handle.state, .finished)
        XCTAssertEqual(handle.job.name, "square", "the definition's stable name")
        XCTAssertEqual(Countdown.name, "Countdown", "the default name is the type's")
    }

    func testTypedEventsOfAnAsyncBody() async throws {
        let dispatcher = Dispatcher(name: "typed-events")
        let handle = JobHandle(Countdown(from: 3))
        let events = handle.events
        handle.start(on: dispatcher)
        var last: String?
        var progress: [Double] = []
        var sawStart = false
        for await event in events {
            switch event {
            case .started: sawStart = true
            case .progress(let value): progress.append(value)
            case .finished(let output): last = output  // a String: no cast
            case .retrying, .failed, .canceled: XCTFail("\(event)")
            }
        }
        XCTAssertTrue(sawStart)
        XCTAssertEqual(last, "lift-off after 3")
        XCTAssertEqual(progress.last, 1)
        XCTAssertEqual(progress, progress.sorted(), "progress never goes back")
    }

    /// `dispatcher.start` then `handle.events`: a short job may have ended in between. The stream then
    /// holds the ended attempt's terminal event (before the fix it waited for an attempt that never came,
    /// which hung the README example about one run in five).
    func testEventsAskedForAfterTheAttemptEndedHoldItsTerminalEvent() async throws {
        let dispatcher = Dispatcher(name: "late-events")
        let handle = dispatcher.start(Square(value: 5))
        _ = try await handle.value
        let collected = Locked<[String]>([])
        let reader = Task {
            for await event in handle.events { collected.withLock { $0.append("\(event)") } }
        }
        let ended = Gate()
        Task { await reader.value; ended.open() }
        let endedInTime = await ended.opened(seconds: 10)
        reader.cancel()
        XCTAssertTrue(endedInTime, "the stream of an ended attempt must end")
        XCTAssertEqual(collected.withLock { $0 }, ["finished(25)"])

        let failing = dispatcher.start(Fails())
        _ = try? await failing.value
        var events: [String] = []
        for await event in failing.events { events.append("\(event)") }
        XCTAssertEqual(events.count, 1)
        XCTAssertTrue(events.first?.hasPrefix("failed") ?? false, "\(events)")
    }

    func testAGraphRunsInOrderOnItsQueuesAndJoinsTypedOutputs() async throws {
        let dispatcher = Dispatcher(name: "graph-definitions", queues: ["io": 1, "cpu": 2])
        let log = Log<String>()
        let probe = ConcurrencyProbe()
        let output = try await dispatcher.run(Report(words: ["a", "b", "c"], log: log, probe: probe))
        XCTAssertEqual(output, "3: A B C")
        let order = log.all
        XCTAssertEqual(order.first, "read")
        XCTAssertEqual(order.last, "join")
        XCTAssertEqual(Set(order.dropFirst().dropLast()), ["upper", "count"])
        XCTAssertLessThanOrEqual(probe.peak("cpu"), 2)

        // Many at once: the queues' limits hold across jobs.
        let many = (0..<50).map { index in
            dispatcher.start(Report(words: Array(repeating: "w", count: index + 1), log: Log(), probe: probe))
        }
        for (index, handle) in many.enumerated() {
            let text = try await handle.value
            XCTAssertTrue(text.hasPrefix("\(index + 1): "), text)
        }
        XCTAssertLessThanOrEqual(probe.peak("cpu"), 2)
    }

    func testReadingAStepThatIsNotAPrerequisiteFailsTheJob() async throws {
        let dispatcher = Dispatcher(name: "confused")
        do {
            _ = try await dispatcher.run(Confused())
            XCTFail("expected a failure")
        } catch let error as JobError {
            guard case .invalidOperationGraph = error else { return XCTFail("\(error)") }
        }
    }

    func testCancellingTheHandleOrTheTaskCancelsTheJob() async throws {
        let dispatcher = Dispatcher(name: "definition-cancel")
        let started = Gate()
        let handle = dispatcher.start(Forever(started: started))
        await assertOpens(started)
        handle.cancel()
        await assertThrowsCancellation { try await handle.value }
        XCTAssertEqual(handle.state, .canceled)

        let again = Gate()
        let task = Task { try await dispatcher.run(Forever(started: again)) }
        await assertOpens(again)
        task.cancel()
        await assertThrowsCancellation { try await task.value }
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(dispatcher.activeJobCount, 0)
    }

    func testADelegateAddedBeforeStartSeesEveryCallback() async throws {
        let dispatcher = Dispatcher(name: "definition-delegate")
        let recorder = Recorder()
        let handle = JobHandle(Square(value: 5), callbackQueue: DispatchQueue(label: "callbacks"))
        handle.job.addDelegate(recorder)
        XCTAssertEqual(handle.state, .ready)
        XCTAssertTrue(handle.start(on: dispatcher))
        let value = try await handle.value
        XCTAssertEqual(value, 25)
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(recorder.log(of: handle.job), [.started, .progress(1), .finished])
        XCTAssertEqual(recorder.allViolations, [])
    }
}
