import Foundation
import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The resume sidecar `NAME.part.meta` (see ``ResumeState``): written about once a second while bytes
/// arrive, and at once on a failure or a cancel, so what arrived can be resumed.
extension DownloadSession {
    /// A `.part` of at least this many bytes gets its sidecar before its first byte, so that it can be
    /// resumed even when nothing more can be written later (a full disk).
    static let earlySidecarSize: Int64 = 1 << 20

    /// Saves the sidecar now.
    func persist() {
        state.withLock { s in persistLocked(&s, force: true) }
    }

    /// Writes the sidecar when forced, or when the last write (or the session's start) is a second old.
    ///
    /// A download that ends within its first second never writes one: creating, renaming and deleting
    /// two extra files per download was most of the cost of small files (ext4 inode work). Failures and
    /// cancels force a write, so what arrived can be resumed.
    func persistLocked(_ s: inout State, force: Bool) {
        let now = DispatchTime.now().uptimeNanoseconds
        guard force || now - s.lastPersist > 1_000_000_000 else { return }
        s.lastPersist = now
        if s.invalidated {
            if s.hasSidecar { unlink(metaPath) }
            s.hasSidecar = false
            return
        }
        s.wroteSidecar = true
        // The first version is created in place (one file, no rename: cheaper for the many downloads
        // that write one only before their first byte); later ones replace it atomically.
        if !s.hasSidecar && s.resume.create(atPath: metaPath) || s.resume.save(toPath: metaPath) {
            s.hasSidecar = true
        }
    }
}
