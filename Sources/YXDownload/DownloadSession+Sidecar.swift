import Foundation
@_spi(YXQueueInternals) import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The resume state of a `.part`: a mark on the file itself for one stream (``ResumeMark``), else the
/// sidecar `NAME.part.meta` (see ``ResumeState``). Written about once a second while bytes arrive when it
/// changed, and at once on a failure or a cancel, so what arrived can be resumed.
extension DownloadSession {
    /// A `.part` of at least this many bytes gets its resume state before its first byte, so that it can
    /// be resumed even when nothing more can be written later (a full disk).
    static let earlySidecarSize: Int64 = 1 << 20

    /// Saves the resume state now.
    func persist() {
        state.withLock { s in persistLocked(&s, force: true) }
    }

    /// Writes the resume state when forced, or when the last write (or the session's start) is a second
    /// old.
    ///
    /// A download that ends within its first second never writes one: creating, renaming and deleting
    /// two extra files per download was most of the cost of small files (ext4 inode work). Failures and
    /// cancels force a write, so what arrived can be resumed. One stream from the first byte is
    /// described by a mark on the `.part` (set again only when it changes), unless the file system
    /// refuses one or a sidecar already exists.
    func persistLocked(_ s: inout State, force: Bool) {
        let now = DispatchTime.now().uptimeNanoseconds
        guard force || now - s.lastPersist > 1_000_000_000 else { return }
        s.lastPersist = now
        if s.invalidated {
            if s.hasSidecar { unlink(metaPath) }
            s.hasSidecar = false
            // The state goes, so that a later run starts over; the `.part` stays marked as ours, or that
            // run would take it for someone else's and leave it.
            if s.mark != ResumeMark.ownership, !s.isUnnamed {
                if let owned = ResumeMark.claim(s.fd) { s.mark = owned } else { dropMarkLocked(&s) }
            }
            return
        }
        // State is kept only for a `.part` with a name: an unnamed one gets its name now.
        guard nameUnnamedPartLocked(&s) else { return }
        if !s.hasSidecar && !s.markRefused, let mark = ResumeMark.value(of: s.resume) {
            if mark == s.mark { return }
            if ResumeMark.write(mark, to: s.fd) {
                s.mark = mark
                return
            }
            s.markRefused = true
        }
        // The first version is created in place (one file, no rename: cheaper for the many downloads
        // that write one only before their first byte); later ones replace it atomically.
        if !s.hasSidecar && s.resume.create(atPath: metaPath) || s.resume.save(toPath: metaPath) {
            s.hasSidecar = true
            // The state outgrew the mark (several segments now): the sidecar, read first, takes over.
            dropMarkLocked(&s)
        }
    }

    /// Removes the `.part`'s mark, if it has one.
    private func dropMarkLocked(_ s: inout State) {
        guard s.mark != nil else { return }
        ResumeMark.remove(from: s.fd)
        s.mark = nil
    }
}
