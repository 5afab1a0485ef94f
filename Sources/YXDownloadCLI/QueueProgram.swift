#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import YXTerminal

/// `yxdownload-queue`: the program that runs `yxdownload enqueue | worker | status` (``QueueCommands``).
///
/// `yxdownload`, having no job store linked, replaces itself with this program by `execv` before it
/// parses those subcommands (this program parses the same arguments with the same code), passing the
/// same arguments: the process keeps its ID, its standard streams,
/// its signals and its parent, so a shell, a service manager or `kill` sees one `yxdownload` process
/// from start to end. The program is looked for next to the running executable (symbolic links
/// resolved, as git finds its helpers), then on `PATH`. Where it is missing, `yxdownload` parses the
/// subcommand itself: its help and usage errors are printed, and a subcommand to run says what is missing.
package enum QueueProgram {
    /// The program's file name.
    package static let name = "yxdownload-queue"

    /// Replaces this process with `yxdownload-queue arguments…`. Returns only if it cannot: then it
    /// prints why and returns ``ExitStatus/failure``. `knownFailure` is what an earlier attempt with the
    /// same arguments returned: then no second attempt is made, and that is what is printed.
    static func replaceProcess(arguments: [String], knownFailure: String?, console: Console) -> Int32 {
        let failure = knownFailure ?? tryToReplaceProcess(arguments: arguments)
        console.writeErr(
            "yxdownload: cannot run '\(arguments.first ?? "")': \(failure). "
                + "Install \(name) in the same folder as yxdownload (see the README).\n")
        return ExitStatus.failure
    }

    /// Replaces this process with `yxdownload-queue arguments…`, from the folder of this program or else
    /// from `PATH`. Returns only if it cannot, with why, and prints nothing.
    static func tryToReplaceProcess(arguments: [String]) -> String {
        let folder = executableDirectory()
        if let folder, case let error = exec(folder + "/" + name, arguments: arguments, searchingPath: false),
            error != ENOENT
        {
            return "\(folder)/\(name): \(String(cString: strerror(error)))"
        }
        let error = exec(name, arguments: arguments, searchingPath: true)
        return error == ENOENT
            ? "\(name), which runs it, is neither in \(folder ?? "the folder of yxdownload") nor on PATH"
            : "\(name): \(String(cString: strerror(error)))"
    }

    /// Runs `execv` (or `execvp`), returning the `errno` it failed with.
    private static func exec(_ program: String, arguments: [String], searchingPath: Bool) -> Int32 {
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        _ = searchingPath ? execvp(program, argv) : execv(program, argv)
        return errno
    }

    /// The folder of the running executable, symbolic links resolved.
    private static func executableDirectory() -> String? {
        #if os(Linux)
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let path = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #elseif canImport(Darwin)
        var size = UInt32(PATH_MAX) + 1
        var raw = [CChar](repeating: 0, count: Int(size))
        guard _NSGetExecutablePath(&raw, &size) == 0, let resolved = realpath(raw, nil) else { return nil }
        defer { free(resolved) }
        let path = String(cString: resolved)
        #else
        return nil
        #endif
        guard let slash = path.lastIndex(of: "/") else { return nil }
        return String(path[..<slash])
    }
}
