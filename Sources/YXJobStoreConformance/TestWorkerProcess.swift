import Foundation
import YXJobStore
@_spi(YXQueueInternals) import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `YXJobStoreTestWorker` process: started with `posix_spawn`, its output in files, waited for on a
/// thread of its own, killed for real.
public final class TestWorkerProcess: Sendable {
    /// How a process ended.
    public enum Exit: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        public var description: String {
            switch self {
            case .exited(let code): "exit \(code)"
            case .signaled(let signal): "signal \(signal)"
            }
        }
    }

    public let pid: pid_t
    public let outputFile: URL
    public let errorFile: URL
    private let exit: ExitBox

    /// The built test worker, next to the test bundle.
    public static func binary() throws -> URL {
        let candidates = [
            Bundle.main.bundleURL,
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ] + Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent() }
        for folder in candidates {
            let file = folder.appendingPathComponent("YXJobStoreTestWorker")
            if FileManager.default.isExecutableFile(atPath: file.path) { return file }
        }
        throw ConformanceError("YXJobStoreTestWorker is not built next to the tests (looked in \(candidates.map(\.path)))")
    }

    /// Starts the worker binary with `arguments`; its output goes to files in `folder`.
    public init(_ arguments: [String], logFolder folder: URL, environment: [String: String] = [:]) throws {
        let id = UUID().uuidString.prefix(8)
        outputFile = folder.appendingPathComponent("worker-\(id).out")
        errorFile = folder.appendingPathComponent("worker-\(id).err")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errorFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        let binary = try Self.binary().path
        let argv = ([binary] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, binary, &actions, nil, argv, envp)
        guard result == 0 else { throw ConformanceError("posix_spawn failed: \(result)") }
        pid = child
        exit = ExitBox()
        let box = exit
        let spawned = child
        Self.live.withLock { _ = $0.insert(child) }
        let thread = Thread {
            var status: Int32 = 0
            while waitpid(spawned, &status, 0) == -1 && errno == EINTR {}
            let signal = status & 0x7f
            box.set(signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal))
            Self.live.withLock { _ = $0.remove(spawned) }
        }
        thread.start()
    }

    /// The worker processes started and not yet reaped.
    private static let live = Locked<Set<pid_t>>([])

    /// Kills (SIGKILL) every worker process that still runs and waits until each is reaped: for a test's
    /// tear-down, so that a scenario that failed half-way leaves no process behind holding connections,
    /// locks or files of the store that the clean-up then deletes.
    ///
    /// - Returns: How many processes were still running.
    @discardableResult
    public static func killSurvivors() async -> Int {
        let survivors = live.withLock { $0 }
        for pid in survivors { kill(pid, SIGKILL) }
        try? await waitUntil("the killed worker processes are reaped", timeout: .seconds(30)) {
            live.withLock { $0.isEmpty }
        }
        return survivors.count
    }

    /// Sends a signal (SIGKILL to kill it for real, SIGTERM for a graceful stop).
    public func send(_ signal: Int32) {
        kill(pid, signal)
    }

    /// How it ended, once it did.
    public var exitStatus: Exit? { exit.value }

    /// Waits for the process to end.
    @discardableResult
    public func waitForExit(timeout: Duration = .seconds(60)) async throws -> Exit {
        try await waitUntil("process \(pid) exits", timeout: timeout) { self.exit.value != nil }
        guard let value = exit.value else { throw ConformanceError("process \(pid) did not exit") }
        return value
    }

    /// What it wrote to standard output so far.
    public var output: String {
        (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
    }

    /// What it wrote to standard error so far.
    public var errorOutput: String {
        (try? String(contentsOf: errorFile, encoding: .utf8)) ?? ""
    }

    /// Waits until a worker process runs its service group: from then on SIGTERM shuts it down gracefully.
    public func waitUntilReady(timeout: Duration = .seconds(60)) async throws {
        try await waitUntil("worker process \(pid) is ready", timeout: timeout) {
            if let exit = self.exit.value {
                throw ConformanceError("worker process \(self.pid) ended (\(exit)) before it was ready: \(self.errorOutput)")
            }
            return self.output.contains("ready\n")
        }
    }

    /// Kills it (SIGKILL) if it still runs and waits for the end.
    public func killAndWait() async {
        if exit.value == nil { send(SIGKILL) }
        _ = try? await waitForExit(timeout: .seconds(30))
    }
}

private final class ExitBox: Sendable {
    private let stored = Locked<TestWorkerProcess.Exit?>(nil)

    var value: TestWorkerProcess.Exit? { stored.withLock { $0 } }

    func set(_ exit: TestWorkerProcess.Exit) {
        stored.withLock { $0 = exit }
    }
}
