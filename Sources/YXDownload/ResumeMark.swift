internal import CCurl
import Foundation

/// What a one-stream download needs to resume, kept on the `.part` itself as an extended attribute
/// (`user.yx` on Linux) instead of in a sidecar file.
///
/// A one-stream download writes its bytes in order, so the `.part`'s size says how much is done; what
/// the size cannot say is which server entity the bytes came from. The mark says that: the `If-Range`
/// validator and the length, and a hash of the URL. It is set before the first byte of a large file
/// (so that a download stopped by a full disk resumes) with one `fsetxattr` on the open `.part`, where a
/// sidecar cost a file created, written, flushed with the rest and unlinked after the rename; it is
/// removed just before the rename, so a final file never carries it. Short values (up to about 68
/// bytes: most entity tags and every HTTP date) fit inside an ext4 inode and cost no block.
///
/// Where the file system keeps no extended attributes (`ENOTSUP`), the sidecar is written instead.
/// Downloads in several segments always use the sidecar: it records each segment's progress.
///
/// The value is text: `1 HASH TOTAL VALIDATOR`, with the URL's 64-bit FNV-1a hash in 16 hex digits,
/// the length in decimal (`-` while unknown) and the validator to the end (an HTTP date has spaces).
enum ResumeMark {
    /// The longest value read back; a longer one is not ours.
    static let maximumLength = 1024

    /// The mark of `state`, or nil when a mark cannot describe it (several segments, or no validator
    /// to make resuming safe).
    static func value(of state: ResumeState) -> String? {
        guard state.segments.count == 1, state.segments[0].start == 0,
            let validator = state.validator, !validator.isEmpty,
            !validator.contains(where: { $0.isNewline })
        else { return nil }
        let total = state.total.map(String.init) ?? "-"
        return "1 \(hash(state.url)) \(total) \(validator)"
    }

    /// The state a mark describes, with nothing done yet (the `.part`'s size says how much is); nil
    /// when the value is not a mark of this version or was made for another URL.
    static func state(from value: String, url: String) -> ResumeState? {
        let fields = value.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
        guard fields.count == 4, fields[0] == "1", fields[1] == hash(url), !fields[3].isEmpty else { return nil }
        let total: Int64?
        if fields[2] == "-" {
            total = nil
        } else {
            guard let known = Int64(fields[2]), known >= 0 else { return nil }
            total = known
        }
        let validator = String(fields[3])
        // An entity tag is quoted; an HTTP date never is. Either way `validator` gives it back.
        let isTag = validator.hasPrefix("\"")
        return ResumeState(
            url: url, etag: isTag ? validator : nil, lastModified: isTag ? nil : validator, total: total,
            segments: [.init(start: 0, end: total.map { $0 - 1 }, done: 0)])
    }

    /// Sets the mark on the open file `fd`; whether it is in place.
    static func write(_ value: String, to fd: Int32) -> Bool {
        var bytes = Array(value.utf8)
        return bytes.withUnsafeMutableBytes { yx_set_resume_mark(fd, $0.baseAddress, $0.count) } == 0
    }

    /// The mark of a `.part` that this program created and that holds no resume state yet: it tells a
    /// later run that the file is its own to empty (a `.part` with bytes and no mark, on a file system
    /// that keeps marks, is someone else's).
    static let ownership = "0"

    /// Sets ``ownership`` on the open file `fd`: the mark set, or nil where the file system keeps none.
    static func claim(_ fd: Int32) -> String? {
        write(ownership, to: fd) ? ownership : nil
    }

    /// The mark of the open file `fd`, if it has one.
    static func read(from fd: Int32) -> String? {
        lookUp(on: fd).value
    }

    /// The mark of the open file `fd`, and whether its absence means the file is not ours: the file
    /// system keeps marks, and this file has none.
    static func lookUp(on fd: Int32) -> (value: String?, isForeign: Bool) {
        var buffer = [UInt8](repeating: 0, count: maximumLength)
        let length = buffer.withUnsafeMutableBytes { yx_get_resume_mark(fd, $0.baseAddress, $0.count) }
        guard length > 0 else {
            #if os(Linux)
            let absent = length == 0 || errno == ENODATA
            #else
            let absent = length == 0 || errno == ENOATTR
            #endif
            return (nil, absent)
        }
        // Too long, or not text: a mark of another program, never ours either way; not foreign by its
        // absence (the old rule: the file starts over).
        return (String(validating: buffer[..<length], as: UTF8.self), false)
    }

    /// Removes the mark of the open file `fd`, if it has one.
    static func remove(from fd: Int32) {
        _ = yx_remove_resume_mark(fd)
    }

    /// 64-bit FNV-1a of the URL's UTF-8 bytes, in 16 lowercase hex digits.
    static func hash(_ url: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in url.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
