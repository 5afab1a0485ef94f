internal import CCurl
import Foundation
import Synchronization
import YXQueue

/// Where a verified TLS connection finds the certificates it trusts.
///
/// libcurl built with both a CA file and a CA directory (as Debian's and Ubuntu's libcurl with OpenSSL
/// are: `/etc/ssl/certs/ca-certificates.crt` and `/etc/ssl/certs`) reads and parses the whole file for
/// every connection: it keeps a parsed store for later connections only when the store comes from a
/// file alone (see `CURLOPT_CA_CACHE_TIMEOUT`). OpenSSL 3 takes about 19 ms of CPU to parse the 140
/// certificates of the system bundle, so a download in 8 segments paid 150 ms before its first byte.
/// The directory holds the same certificates, each in a file named after the hash of its subject, which
/// OpenSSL opens only when a chain needs it.
///
/// So, with ``directoryFirst``, a connection first trusts the directory alone. When it fails
/// verification that way, the transfer is made once more with the whole setting (the file and the
/// directory), and fails only if that fails too: what is accepted is exactly what the whole setting
/// accepts, and a certificate added to the file but not to the directory costs one more handshake (for
/// the first transfer to that origin: the engine remembers it, see ``Fallbacks``), not a failure.
struct TrustStore: Sendable, Equatable {
    /// The CA file; nil: libcurl's built-in one.
    var file: String?
    /// The CA directory; nil: libcurl's built-in one.
    var directory: String?
    /// Whether connections try the directory alone first.
    var directoryFirst: Bool

    /// libcurl's built-in setting, with the directory first where ``appliesTo(tlsLibrary:caFile:caDirectory:)``
    /// says so.
    static let system: TrustStore = {
        var directoryFirst = false
        if let info = curl_version_info(CURLVERSION_NINTH)?.pointee {
            // The built-in paths are reported from the ninth version of the structure on (libcurl 7.70).
            let reportsPaths = info.age.rawValue >= CURLVERSION_NINTH.rawValue
            directoryFirst = appliesTo(
                tlsLibrary: info.ssl_version.map { String(cString: $0) },
                caFile: reportsPaths ? info.cainfo.map { String(cString: $0) } : nil,
                caDirectory: reportsPaths ? info.capath.map { String(cString: $0) } : nil)
        }
        return TrustStore(file: nil, directory: nil, directoryFirst: directoryFirst)
    }()

    /// Whether the directory is worth trying alone, for libcurl built with these settings: it uses
    /// OpenSSL or a fork of it (whose store libcurl does not keep when it has a directory; GnuTLS ignores
    /// the directory), it has both a CA file and a CA directory, and the directory exists.
    static func appliesTo(tlsLibrary: String?, caFile: String?, caDirectory: String?) -> Bool {
        // A build with several TLS libraries names the inactive ones in parentheses, first.
        guard let tlsLibrary, ["OpenSSL/", "LibreSSL/", "BoringSSL", "quictls/"].contains(where: tlsLibrary.hasPrefix)
        else { return false }
        guard let caFile, !caFile.isEmpty, let caDirectory, !caDirectory.isEmpty else { return false }
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: caDirectory, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// The origins whose certificates the directory alone failed to verify, in one engine: their later
    /// transfers use the whole setting at once, not one failed handshake each. Empty for almost every run,
    /// and then asked without a lock.
    final class Fallbacks: Sendable {
        private let origins = Locked<Set<Origin>>([])
        private let isEmpty = Atomic<Bool>(true)

        func contains(_ url: URL) -> Bool {
            guard !isEmpty.load(ordering: .acquiring), let origin = Origin(url) else { return false }
            return origins.withLock { $0.contains(origin) }
        }

        func insert(_ url: URL) {
            guard let origin = Origin(url) else { return }
            origins.withLock { _ = $0.insert(origin) }
            isEmpty.store(false, ordering: .releasing)
        }
    }

    /// Sets a verifying easy handle's trust: the directory alone (`directoryOnly` with
    /// ``directoryFirst``), or the whole setting.
    func apply(to handle: UnsafeMutableRawPointer, directoryOnly: Bool) {
        if let directory { _ = yx_easy_setopt_string(handle, CURLOPT_CAPATH, directory) }
        if directoryFirst && directoryOnly {
            _ = yx_easy_setopt_string(handle, CURLOPT_CAINFO, nil)
        } else if let file {
            _ = yx_easy_setopt_string(handle, CURLOPT_CAINFO, file)
        }
    }
}
