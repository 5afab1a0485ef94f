// A worker process for the store tests: the conformance suite and the chaos tests start it, kill it with
// SIGKILL, stop it with SIGTERM and restart it. Not a product.
//
//   YXJobStoreTestWorker worker --store LOCATION [--schema NAME] --names a,b [--concurrency N] [--batch N]
//                               [--recovery-bound-ms N] [--exit-when-idle]
//   YXJobStoreTestWorker enqueue-and-crash --store LOCATION [--schema NAME] --name NAME --count N
//   YXJobStoreTestWorker results --store LOCATION [--schema NAME]
//
// LOCATION is an SQLite file path or a postgres:// URL.

import Foundation
import Logging
import ServiceLifecycle
import YXJobStore

#if canImport(Glibc)
import Glibc
#endif

struct Arguments {
    var command: String
    var options: [String: String] = [:]
    var flags: Set<String> = []

    init(_ arguments: [String]) throws {
        guard let command = arguments.first else { throw TestWorkerError.usage("no command") }
        self.command = command
        var index = 1
        while index < arguments.count {
            let argument = arguments[index]
            guard argument.hasPrefix("--") else { throw TestWorkerError.usage("unexpected \(argument)") }
            let name = String(argument.dropFirst(2))
            if index + 1 < arguments.count, !arguments[index + 1].hasPrefix("--") {
                options[name] = arguments[index + 1]
                index += 2
            } else {
                flags.insert(name)
                index += 1
            }
        }
    }

    func required(_ name: String) throws -> String {
        guard let value = options[name] else { throw TestWorkerError.usage("--\(name) is required") }
        return value
    }

    func integer(_ name: String, default value: Int) throws -> Int {
        guard let text = options[name] else { return value }
        guard let number = Int(text) else { throw TestWorkerError.usage("--\(name) takes a number") }
        return number
    }
}

enum TestWorkerError: Error, CustomStringConvertible {
    case usage(String)

    var description: String {
        switch self {
        case .usage(let message): "usage: \(message)"
        }
    }
}

/// The handlers the tests use, by name.
func makeRegistry(names: [String], results: any ResultsTable, workerID: String) -> JobRegistry {
    var registry = JobRegistry()
    for name in names {
        switch name {
        case "chaos.append":
            // Appends the execution to the results table (the chaos test counts executions per job), then
            // works for as many milliseconds as its payload says.
            registry.register(name) { payload, context in
                try await results.record(job: context.id, attempt: context.attempt, worker: workerID)
                let milliseconds = Int(String(decoding: payload, as: UTF8.self)) ?? 0
                if milliseconds > 0 { try await Task.sleep(for: .milliseconds(milliseconds)) }
            }
        case "conformance.block":
            // Reports half its units, then runs until canceled.
            registry.register(name) { _, context in
                context.reportProgress(completedUnits: 500, totalUnits: 1000)
                while true {
                    try await Task.sleep(for: .seconds(3600))
                }
            }
        default:
            registry.register(name) { _, _ in }
        }
    }
    return registry
}

func runWorker(_ arguments: Arguments, logger: Logger) async throws {
    let location = try arguments.required("store")
    let schema = arguments.options["schema"]
    let names = try arguments.required("names").split(separator: ",").map(String.init)
    let store = try await openStore(location, schema: schema, logger: logger)
    let results = try await openResults(location, schema: schema, logger: logger)
    var configuration = JobWorker.Configuration()
    configuration.maximumConcurrentJobs = try arguments.integer("concurrency", default: 8)
    configuration.claimBatchSize = try arguments.integer("batch", default: 8)
    configuration.recoveryBound = .milliseconds(try arguments.integer("recovery-bound-ms", default: 30_000))
    configuration.cancelCheckInterval = .milliseconds(try arguments.integer("cancel-check-ms", default: 200))
    configuration.progressInterval = .milliseconds(100)
    configuration.shutdownGracePeriod = .seconds(5)
    configuration.exitWhenIdle = arguments.flags.contains("exit-when-idle")
    let worker = JobWorker(
        store: store,
        runner: makeRegistry(names: names, results: results, workerID: configuration.workerID),
        configuration: configuration,
        logger: logger
    )
    // The tests find the worker by its process id in the owner column.
    say("worker \(worker.id)")
    let group = ServiceGroup(
        configuration: ServiceGroupConfiguration(
            services: [.init(service: worker), .init(service: ReadyService())],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
    )
    try await group.run()
    try await results.close()
    try await store.close()
}

/// Prints "ready" once the service group runs, that is once SIGTERM leads to a graceful shutdown (the
/// group traps its signals before it starts its services); then waits for that shutdown.
struct ReadyService: Service {
    func run() async throws {
        say("ready")
        try? await gracefulShutdown()
    }
}

/// Enqueues jobs, prints their identifiers, and dies at once: "a crash right after enqueue".
func enqueueAndCrash(_ arguments: Arguments, logger: Logger) async throws {
    let store = try await openStore(try arguments.required("store"), schema: arguments.options["schema"], logger: logger)
    let name = try arguments.required("name")
    let count = try arguments.integer("count", default: 1)
    let results = try await store.enqueue((0..<count).map { _ in JobRequest(name: name) })
    say(results.map { "enqueued \($0.id)" }.joined(separator: "\n"))
    kill(getpid(), SIGKILL)
}

/// Writes a line to standard output at once (unbuffered: the process may be killed right after).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func printResults(_ arguments: Arguments, logger: Logger) async throws {
    let location = try arguments.required("store")
    let results = try await openResults(location, schema: arguments.options["schema"], logger: logger)
    let lines = try await results.all().map { "\($0.job) \($0.attempt) \($0.worker)" }
    if !lines.isEmpty { say(lines.joined(separator: "\n")) }
    try await results.close()
}

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = ProcessInfo.processInfo.environment["YXJOBSTORE_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .warning
    return handler
}
let logger = Logger(label: "test-worker.\(getpid())")
do {
    let arguments = try Arguments(Array(CommandLine.arguments.dropFirst()))
    switch arguments.command {
    case "worker": try await runWorker(arguments, logger: logger)
    case "enqueue-and-crash": try await enqueueAndCrash(arguments, logger: logger)
    case "results": try await printResults(arguments, logger: logger)
    default: throw TestWorkerError.usage("unknown command \(arguments.command)")
    }
} catch {
    FileHandle.standardError.write(Data("YXJobStoreTestWorker: \(String(reflecting: error))\n".utf8))
    exit(1)
}
