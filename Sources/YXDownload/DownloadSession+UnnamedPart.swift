internal import CCurl
import Foundation
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
/// Elsewhere (macOS), on a file system without `O_TMPFILE`, or without `/proc` (which `linkat` needs to
/// name the file without privileges), the `.part` is created with its name as before.
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

    /// Names the unnamed `.part` `NAME.part`; false when it cannot (a `NAME.part` appeared meanwhile, made
    /// by someone else, which is left alone; or the folder refuses). Called with the state locked.
    func nameUnnamedPartLocked(_ s: inout State) -> Bool {
        guard s.isUnnamed else { return true }
        guard yx_link_unnamed(s.fd, partPath) == 0 else {
            let code = errno
            logger.debug(
                "cannot name the part file",
                metadata: ["url": "\(redactedURL)", "file": "\(partPath)", "error": "\(String(cString: strerror(code)))"])
            errno = code  // for the caller's message
            return false
        }
        s.isUnnamed = false
        return true
    }

    /// A path that reads the `.part` open as `fd`, named or not.
    func readablePath(fd: Int32, isUnnamed: Bool) -> String {
        isUnnamed ? "/proc/self/fd/\(fd)" : partPath
    }
}
