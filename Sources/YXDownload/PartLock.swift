internal import CCurl
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The lock a download holds on the `NAME.part` it writes, so that no other process writes it too.
///
/// Two processes that write one `.part` at once (two runs of one list, a run and a worker that share a
/// folder, a worker whose lease ran out and the one that took its job over) would mix their bytes, and
/// one would rename a file the other still writes. So a download locks its `.part` for its process: a
/// POSIX record lock on the whole file, taken when it opens the `.part` by name, or just before a
/// `.part` made without a name gets one. Another process finds it locked and leaves the file alone.
///
/// The lock ends when the process closes a descriptor of the file, or ends (`kill -9` included). It
/// holds across machines on NFS where locking is on (not with `nolock` or `local_lock`). A file system
/// without locks (`ENOLCK`) is used without one.
package enum PartLock {
    /// Locks the file open as `fd` for this process: nil when it is locked (or cannot be, on a file
    /// system without locks), else the `errno` that says another process holds it.
    static func lock(_ fd: Int32) -> Int32? {
        guard yx_lock_whole_file(fd) != 0 else { return nil }
        let code = errno
        return code == EAGAIN || code == EACCES ? code : nil
    }

    /// Whether another process holds the lock of the `.part` at `path` (one that is downloading into it).
    /// Looks without locking; false when there is no such file.
    ///
    /// - Important: Closing the descriptor it opens drops this process's own locks on that file: do not
    ///   call it for a `.part` this process writes.
    package static func isHeldByAnotherProcess(at path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return yx_file_is_locked_by_another(fd) == 1
    }
}
