import Foundation
import YXTerminal

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `-d DIR` of a download or a worker: created if missing before anything runs.
package enum OutputDirectory {
    /// Creates `path` (and its parents) if missing; on failure says why on standard error and returns
    /// `nil` (the command exits 2).
    package static func create(_ path: String, console: Console) -> URL? {
        let directory = URL(fileURLWithPath: path, isDirectory: true)
        // Most runs find the folder there, or make one level: one `mkdir`, without `FileManager`'s
        // first use (with the `opendir` of `DescriptorBudget`, 0.7–0.8 ms of CPU of a run's start).
        // Anything else (parents to make, an error to explain) goes through `FileManager`.
        if mkdir(path, 0o777) == 0 || (errno == EEXIST && isDirectory(path)) { return directory }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return directory
        } catch {
            console.writeErr("yxdownload: cannot create the output directory \(path): \(error.localizedDescription)\n")
            return nil
        }
    }

    private static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}
