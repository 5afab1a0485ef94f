internal import CCurl
import Foundation
import Synchronization
import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh download's `.part` starts without a name, and gets one only when it is worth resuming.
///
/// On Linux a file can be made in a folder without a name (`O_TMPFILE`) and named later (`linkat`). A
/// fresh download (``DownloadSession/destinationIsFresh``) writes into such a file; it becomes
/// `NAME.part` the first time its resume state is saved (before the first byte of a file of 1 MiB or
/// more whose server gave a validator, after the first second, on a failure or on a cancel), and
/// otherwise, verified and flushed, gets its final name directly. A small file then costs the folder one new entry, as it costs `curl`,
/// instead of a create and a rename (two lookups, an insert, and a rename's insert and delete, under
/// the folder's lock: on 2,000 files of 8 KiB the rename alone was 13 % of the CPU time).
///
/// What a user sees does not change: a file under its final name is whole; an interrupted or failed
/// download with bytes keeps `NAME.part`; a small download killed (`kill -9`) within its first second
/// leaves nothing, where it used to leave a `.part` without resume state, which the next run started
/// over.
///
/// The name is given by the descriptor (`linkat` with `AT_EMPTY_PATH`) where the kernel allows it (Linux
/// 6.10 and later, to a process with the credentials the file was opened with), and otherwise through
/// `/proc/self/fd/N` (see ``linkUnnamed(_:to:)``).
///
/// Elsewhere (macOS), on a file system without `O_TMPFILE`, or without `/proc` (which `linkat` needs to
/// name the file without privileges on older kernels), the `.part` is created with its name as before.
extension DownloadSession {
    /// Whether this process can name an unnamed file: `/proc/self/fd` is there. Looked at once.
    static let canNameUnnamedFiles: Bool = {
        #if os(Linux)
        return access("/proc/self/fd", X_OK) == 0
        #else
        return false
        #endif
    }()

    /// The folder of the final file (and of the `.part`), as a string.
    var partDirectory: String {
        // As a string: `deletingLastPathComponent()` cost 10,000 instructions per file.
        finalPath.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(finalPath[..<$0]) } ?? "."
    }

    /// Opens a new unnamed file in the folder, or returns nil when that cannot be done here (the caller
    /// then creates `NAME.part` with its name, and reports any error of the folder as usual).
    func openUnnamedPart() -> Int32? {
        guard Self.canNameUnnamedFiles else { return nil }
        let fd = partDirectory.withCString { yx_open_unnamed($0, 0o644) }  // the path's bytes, not a copy
        return fd >= 0 ? fd : nil
    }

    /// Whether the kernel refused to name a file by its descriptor: then every later name goes through
    /// `/proc` at once.
    static let descriptorLinkRefused = Atomic<Bool>(false)

    /// Gives the unnamed file open as `fd` the name `path` (a C string), replacing nothing: 0, or -1 with
    /// `errno` set (`EEXIST` when `path` exists).
    ///
    /// By the descriptor first (`AT_EMPTY_PATH`). Linux refuses that with `ENOENT` before 6.10 (without
    /// `CAP_DAC_READ_SEARCH`), and to a process whose credentials changed since it opened the file; a
    /// sandbox may refuse it with another error. So any failure but `EEXIST` is tried again through
    /// `/proc/self/fd`, and when that works, the first way is not tried again in this process. An error
    /// that both ways give (the folder went away, no room) is the caller's, with `/proc`'s `errno`.
    ///
    /// Measured (2026-11-26): on 2,000 files of 8 KiB the path walks of the links through `/proc` and of
    /// the full paths were about 5 % of yxdownload's CPU time (`perf record`), half of that since; alone,
    /// 20,000 links as an unprivileged user took 7.0–7.7 µs each by descriptor and 8.7–9.1 µs through
    /// `/proc`.
    static func linkUnnamed(_ fd: Int32, to path: UnsafePointer<CChar>) -> Int32 {
        linkUnnamed(fd, to: path, refused: descriptorLinkRefused, byDescriptor: linkByDescriptor)
    }

    /// The first way alone: `linkat` by the descriptor, `AT_EMPTY_PATH`.
    static func linkByDescriptor(_ fd: Int32, to path: UnsafePointer<CChar>) -> Int32 {
        yx_link_unnamed_by_descriptor(fd, path)
    }

    /// ``linkUnnamed(_:to:)`` with its first way and its memory of a refusal given (tests give a first way
    /// that is refused, as on older kernels).
    static func linkUnnamed(
        _ fd: Int32, to path: UnsafePointer<CChar>, refused: borrowing Atomic<Bool>,
        byDescriptor: (Int32, UnsafePointer<CChar>) -> Int32
    ) -> Int32 {
        if !refused.load(ordering: .relaxed) {
            if byDescriptor(fd, path) == 0 { return 0 }
            guard errno != EEXIST else { return -1 }
            guard yx_link_unnamed_through_proc(fd, path) == 0 else { return -1 }
            refused.store(true, ordering: .relaxed)
            return 0
        }
        return yx_link_unnamed_through_proc(fd, path)
    }

    /// Names the unnamed `.part` `NAME.part`; false when it cannot (a `NAME.part` appeared meanwhile, made
    /// by someone else, which is left alone; or the folder refuses). Called with the state locked.
    func nameUnnamedPartLocked(_ s: inout State) -> Bool {
        guard s.isUnnamed else { return true }
        // Locked for this process before it has a name, as a `.part` opened by name is (`lockPart`): no
        // other run can take it between the link and the lock. Nobody else can hold a lock on a file
        // without a name, so this cannot fail but for a file system without locks.
        _ = PartLock.lock(s.fd)
        guard partPath.withCString({ Self.linkUnnamed(s.fd, to: $0) }) == 0 else {
            let code = errno
            logger.debug(
                "cannot name the part file",
                metadata: ["url": "\(redactedURL)", "file": "\(partPath)", "error": "\(String(cString: strerror(code)))"])
            errno = code  // for the caller's message
            return false
        }
        s.isUnnamed = false
        // Marked as ours from the moment it has a name, as a `.part` made by name is: a commit whose rename
        // then fails leaves it so, and the next run resumes it instead of leaving it as someone else's
        // (found by a review). The state's own mark or sidecar, when written, replaces this one.
        if s.mark == nil, !s.hasSidecar { s.mark = ResumeMark.claim(s.fd) }
        return true
    }
}
