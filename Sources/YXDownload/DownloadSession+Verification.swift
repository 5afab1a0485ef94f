import Foundation
@_spi(YXQueueInternals) import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Verification of the whole `.part` before it may get its final name: its length against what the
/// server announced, and its digests (hashed once, for the checksum and for `computeSHA256` together).
extension DownloadSession {
    /// What `verify()` found: a result to report now (a skip), or a whole `.part` waiting for its
    /// flush to disk and its rename.
    enum Verified: Sendable {
        case done(DownloadResult)
        case awaitingCommit(fd: Int32, result: DownloadResult, hasSidecar: Bool, hasMark: Bool)
    }

    /// Verifies the `.part`: its length against what the server announced, its checksum against the
    /// one given. Its bytes must reach the disk (`DiskSync`) before `commit` renames it.
    func verify() throws(DownloadError) -> Verified {
        let (plan, fd, resume, resumedFrom, received, hasSidecar, hasMark) = state.withLock { s in
            (s.plan, s.fd, s.resume, s.resumedFrom, s.received, s.hasSidecar, s.mark != nil)
        }
        if plan == .skip {
            var info = stat()
            let size = stat(finalPath, &info) == 0 ? Int64(info.st_size) : 0
            return .done(DownloadResult(
                outcome: .skippedExisting, url: redactedURL, location: final, bytes: size, bytesReceived: 0,
                resumedFrom: 0, sha256: nil))
        }
        var info = stat()
        fstat(fd, &info)
        let size = Int64(info.st_size)
        if let total = resume.total, size != total || !resume.isComplete {
            if size > total { discard() }
            throw DownloadError(.lengthMismatch, "the file has \(size) bytes, the server announced \(total)", url: redactedURL)
        }
        var algorithms = Set<Checksum.Algorithm>()
        if let checksum { algorithms.insert(checksum.algorithm) }
        if options.computeSHA256 { algorithms.insert(.sha256) }
        var digests: [Checksum.Algorithm: String] = [:]
        if !algorithms.isEmpty {
            do {
                // Through the descriptor, not a path: a name swapped for a link or a FIFO meanwhile is
                // neither followed nor waited on.
                digests = try MultiHasher.digests(ofDescriptor: fd, algorithms: algorithms)
            } catch {
                throw DownloadError.fileSystem("cannot read", path: partPath, url: redactedURL)
            }
        }
        if let checksum, digests[checksum.algorithm] != checksum.hex {
            discard()
            throw DownloadError(
                .checksumMismatch,
                "\(checksum.algorithm.rawValue) mismatch: expected \(checksum.hex), got \(digests[checksum.algorithm] ?? "?")",
                url: redactedURL)
        }
        let result = DownloadResult(
            outcome: plan == .finalizeOnly ? .finalizedPart : .downloaded, url: redactedURL, location: final,
            bytes: size, bytesReceived: received, resumedFrom: resumedFrom, sha256: digests[.sha256])
        return .awaitingCommit(fd: fd, result: result, hasSidecar: hasSidecar, hasMark: hasMark)
    }
}
