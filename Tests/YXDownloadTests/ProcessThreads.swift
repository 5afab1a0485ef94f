import Foundation

/// The threads of this process, as Linux lists them in `/proc/self/task`.
enum ProcessThreads {
    /// How many threads the process has now (0 where `/proc` is missing).
    static var count: Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).count
    }

    /// The names of the threads (`comm`, at most 15 characters), one per thread.
    static var names: [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .newlines)
        }
    }

    /// How many transfer-engine lane threads (`yxdl.lane.N`) the process has now.
    static var lanes: Int { names.filter { $0.hasPrefix("yxdl.lane.") }.count }

    /// Whether `/proc/self/task` can be read here (Linux).
    static var isAvailable: Bool { FileManager.default.fileExists(atPath: "/proc/self/task") }
}
