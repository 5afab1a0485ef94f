import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a finished `yxdownload` printed and returned.
struct CommandOutput {
    var status: Int32
    var stdout: String
    var stderr: String
    /// Wall time from spawn to exit.
    var seconds: Double

    var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
    var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
}

/// The real `yxdownload` binary, started with `posix_spawn` in a folder, its output going to files.
///
/// Waiting uses `waitpid` on a thread of its own: `Process.waitUntilExit()` spins a run loop and can
/// hang when called from an async test.
final class RunningCommand: @unchecked Sendable {
    let pid: pid_t
    private let outFile: URL
    private let errFile: URL
    private let begun = DispatchTime.now()

    /// The built binary, next to the test bundle.
    static var binary: URL {
        let candidates = [
            Bundle.main.bundleURL,
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ] + Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent() }
        for folder in candidates {
            let file = folder.appendingPathComponent("yxdownload")
            if FileManager.default.isExecutableFile(atPath: file.path) { return file }
        }
        fatalError("yxdownload is not built next to the tests (looked in \(candidates.map(\.path)))")
    }

    /// Starts `yxdownload` (or `executable`) with `arguments` in `folder`.
    ///
    /// - Parameters:
    ///   - setup: Shell commands run before the program replaces the shell, e.g. `ulimit -n 64`.
    ///   - executable: Another program to run instead of `yxdownload` (a path).
    init(
        _ arguments: [String], in folder: URL, stdin: String? = nil, environment: [String: String] = [:],
        setup: String? = nil, executable: String? = nil
    ) throws {
        let id = UUID().uuidString
        outFile = folder.deletingLastPathComponent().appendingPathComponent("stdout-\(id)")
        errFile = folder.deletingLastPathComponent().appendingPathComponent("stderr-\(id)")
        let inFile = folder.deletingLastPathComponent().appendingPathComponent("stdin-\(id)")
        try Data((stdin ?? "").utf8).write(to: inFile)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inFile.path, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        var env = ProcessInfo.processInfo.environment
        env["TERM"] = "dumb"
        for (key, value) in environment { env[key] = value }
        // `sh` changes folder then becomes yxdownload (exec), so signals reach yxdownload itself.
        let script = (setup.map { "\($0) && " } ?? "") + "cd \"$1\" && shift && exec \"$@\""
        let program = executable ?? Self.binary.path
        let argv = (["/bin/sh", "-c", script, "sh", folder.path, program] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // The signals a run handles start at their default action, whatever the test runner's are (a
        // runner started in the background of a script ignores SIGINT, and a command would inherit
        // that); a test that wants one ignored says so in `setup` (`trap '' INT`).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let result = posix_spawn(&child, "/bin/sh", &actions, &attributes, argv, envp)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        pid = child
    }

    /// Sends a signal.
    func send(_ signal: Int32) {
        kill(pid, signal)
    }

    /// Waits for the exit, at most `seconds`: then kills the command (`SIGKILL`) and returns nil.
    func wait(timeout seconds: Double) async -> CommandOutput? {
        let pid = self.pid
        let timedOut = TimeoutFlag()
        let timer = DispatchWorkItem {
            timedOut.set()
            kill(pid, SIGKILL)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: timer)
        let output = await wait()
        timer.cancel()
        return timedOut.isSet ? nil : output
    }

    /// Waits for the exit and reads the output.
    func wait() async -> CommandOutput {
        let pid = self.pid
        let status: Int32 = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var raw: Int32 = 0
                while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
                let signaled = (raw & 0x7F) != 0
                continuation.resume(returning: signaled ? 128 + (raw & 0x7F) : (raw >> 8) & 0xFF)
            }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - begun.uptimeNanoseconds) / 1e9
        let out = (try? String(contentsOf: outFile, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOf: errFile, encoding: .utf8)) ?? ""
        return CommandOutput(status: status, stdout: out, stderr: err, seconds: seconds)
    }

    /// What the command printed on standard output so far.
    var stdoutSoFar: String { (try? String(contentsOf: outFile, encoding: .utf8)) ?? "" }

    /// What the command printed on standard error so far.
    var stderrSoFar: String { (try? String(contentsOf: errFile, encoding: .utf8)) ?? "" }
}

/// Set once, by the timer that killed a command.
private final class TimeoutFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
