import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The sidecar beside a `.part` file (`NAME.part.meta`): what makes resuming safe.
///
/// It records which server entity the bytes came from (validator and length) and which byte ranges are
/// done. It is written atomically (a temporary file, then a rename), so it is always either the old or
/// the new version. It may lag behind the `.part` (it is written about once a second): that only means
/// a few bytes are fetched twice.
struct ResumeState: Codable, Sendable, Equatable {
    /// One byte range of the file and how much of it, from its start, is done.
    struct Segment: Codable, Sendable, Equatable {
        var start: Int64
        /// Inclusive; nil while the length is unknown (a single stream of unknown length).
        var end: Int64?
        var done: Int64

        var length: Int64? { end.map { $0 - start + 1 } }
        var isComplete: Bool { length.map { done >= $0 } ?? false }
        var next: Int64 { start + done }
    }

    var version = 1
    /// The URL without credentials.
    var url: String
    var etag: String?
    var lastModified: String?
    var total: Int64?
    var segments: [Segment]

    /// The `If-Range` value: a strong entity tag, else the date.
    var validator: String? {
        if let etag, !etag.hasPrefix("W/") { return etag }
        return lastModified
    }

    /// Bytes done, over all segments.
    var doneBytes: Int64 { segments.reduce(0) { $0 + $1.done } }

    var isComplete: Bool { !segments.isEmpty && segments.allSatisfy(\.isComplete) }

    static func load(from url: URL) -> ResumeState? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(ResumeState.self, from: data)
    }

    /// Writes the state atomically.
    func save(to url: URL) throws {
        guard save(toPath: url.path) else { throw CocoaError(.fileWriteUnknown) }
    }

    /// Writes the state atomically: into `PATH.tmp`, then renamed over `PATH`.
    ///
    /// The temporary file has a fixed name (not a random one, as `Data.write(options: .atomic)` makes), so a
    /// process killed between the two steps leaves a file that the next write replaces and that a
    /// finished download removes, never a stray file with a made-up name.
    ///
    /// - Returns: whether the new state is in place (a full disk, say, leaves the old one).
    func save(toPath path: String) -> Bool {
        guard let data = try? JSONEncoder().encode(self) else { return false }
        let temporary = path + ".tmp"
        // Never through a symbolic link (it would truncate and write a file outside the folder): one in
        // the way is removed, as a stale temporary file is replaced.
        // Nor waiting on a FIFO put there (`O_NONBLOCK`: its open fails at once without a reader).
        var fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o644)
        if fd < 0 && errno == ELOOP && unlink(temporary) == 0 {
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        }
        guard fd >= 0 else { return false }
        guard Self.writeAll(data, to: fd), rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    /// Writes the first version of the state straight under `path`, which must not exist yet: one file
    /// created, no rename. A process killed half-way leaves a sidecar that does not decode, and
    /// ``load(from:)`` then gives `nil`: the download starts over, as it would without one.
    ///
    /// - Returns: whether the state is in place; `false` also when `path` exists (then use
    ///   ``save(toPath:)``, which replaces it atomically).
    func create(atPath path: String) -> Bool {
        guard let data = try? JSONEncoder().encode(self) else { return false }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return false }
        guard Self.writeAll(data, to: fd) else {
            unlink(path)
            return false
        }
        return true
    }

    /// Writes all of `data` to `fd`, then closes it; whether every byte was written.
    private static func writeAll(_ data: Data, to fd: Int32) -> Bool {
        defer { close(fd) }
        var written = 0
        let complete = data.withUnsafeBytes { bytes -> Bool in
            guard let base = bytes.baseAddress else { return bytes.isEmpty }
            while written < bytes.count {
                let result = write(fd, base + written, bytes.count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                written += result
            }
            return true
        }
        return complete
    }
}
