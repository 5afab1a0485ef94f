import Foundation
import YXTerminal

/// The `-d DIR` of a download or a worker: created if missing before anything runs.
package enum OutputDirectory {
    /// Creates `path` (and its parents) if missing; on failure says why on standard error and returns
    /// `nil` (the command exits 2).
    package static func create(_ path: String, console: Console) -> URL? {
        let directory = URL(fileURLWithPath: path, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return directory
        } catch {
            console.writeErr("yxdownload: cannot create the output directory \(path): \(error.localizedDescription)\n")
            return nil
        }
    }
}
