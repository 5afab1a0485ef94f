import Foundation

/// The result of a ``ChecksumJob``: the file's fingerprint and where it was written.
struct ChecksumReport: Sendable {
    /// The file that was read.
    let file: URL
    /// Its size.
    let bytes: Int64
    /// Its FNV-1a 64 hash in hex.
    let digest: String
    /// The sidecar file holding `DIGEST  NAME`, as `sha256sum` prints it.
    let sidecar: URL
}
