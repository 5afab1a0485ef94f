import Foundation
import YXTerminal

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How many downloads fit the process's limit of open files (`ulimit -n`).
///
/// A running download holds its `.part` open and each of its connections holds a socket (plus, for a
/// while, an idle one in curl's cache). When they use up every descriptor, downloads fail with "Too many
/// open files", and worse, libdispatch on Linux stops the process (SIGILL) when its own bookkeeping
/// cannot open a file. So the run is sized to leave a reserve: with `ulimit -n 64`, `-j 50 -x 4` runs
/// as `-j 2 -x 4`.
package struct DescriptorBudget {
    /// Descriptors kept free for the runtime, libdispatch, the sidecar's temporary file and the like.
    package static let reserve = 24
    /// Descriptors one connection may need: its socket, an idle one in curl's cache, and a probe's.
    package static let perConnection = 3

    /// The soft limit of open files, if there is one.
    package var limit: Int?
    /// Descriptors open now.
    package var inUse: Int

    /// The current process's limit and usage.
    package static var current: DescriptorBudget {
        var limits = rlimit()
        #if os(Linux)
        let got = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limits) == 0
        #else
        let got = getrlimit(RLIMIT_NOFILE, &limits) == 0
        #endif
        let limit: Int? = got && limits.rlim_cur != rlim_t.max ? Int(clamping: limits.rlim_cur) : nil  // rlim_t.max: RLIM_INFINITY
        let open = openDescriptors() ?? 16
        return DescriptorBudget(limit: limit, inUse: open)
    }

    /// The entries of `/proc/self/fd` (the listing's own descriptor included), or nil without it.
    /// `opendir` rather than `FileManager`, whose first use is a measurable part of a run's start (see
    /// ``OutputDirectory``).
    private static func openDescriptors() -> Int? {
        guard let listing = opendir("/proc/self/fd") else { return nil }
        defer { closedir(listing) }
        var count = 0
        while let entry = readdir(listing) {
            let isDot = withUnsafeBytes(of: entry.pointee.d_name) { name in
                name[0] == UInt8(ascii: ".") && (name[1] == 0 || (name[1] == UInt8(ascii: ".") && name[2] == 0))
            }
            if !isDot { count += 1 }
        }
        return count
    }

    /// The number of downloads to run at once, at most `jobs`, so that `jobs` files with `connections`
    /// each stay within the limit (at least 1).
    package func jobs(_ jobs: Int, connections: Int) -> Int {
        guard let limit else { return jobs }
        let available = limit - inUse - Self.reserve
        return max(1, min(jobs, available / Self.perJob(connections: connections)))
    }

    /// How many more one-stream downloads may wait for the disk beyond `jobs`, each with its
    /// `.part` open, having given their transfer slot to the next download: up to 3 per slot (at most
    /// 192), within the descriptors `jobs` downloads leave free, keeping `jobs` more for the downloads
    /// waiting for a slot, which may reach that stage too.
    package func finalizing(_ jobs: Int, connections: Int) -> Int {
        let wanted = min(3 * jobs, 192)
        guard let limit else { return wanted }
        let spare = limit - inUse - Self.reserve - jobs * Self.perJob(connections: connections) - jobs
        return max(0, min(wanted, spare))
    }

    /// Descriptors one download may hold: its `.part` and its connections'.
    private static func perJob(connections: Int) -> Int {
        1 + perConnection * max(1, connections)
    }

    /// ``jobs(_:connections:)`` for a command: says on standard error when fewer than `jobs` fit.
    package func jobs(_ jobs: Int, connections: Int, console: Console) -> Int {
        let fitting = self.jobs(jobs, connections: connections)
        if fitting < jobs, let limit {
            console.writeErr(
                "yxdownload: the limit of \(limit) open files (ulimit -n) leaves room for \(fitting) download"
                    + "\(fitting == 1 ? "" : "s") at once with -x \(connections); running \(fitting) instead of \(jobs)\n")
        }
        return fitting
    }
}
