internal import CCurl
import Foundation
import Synchronization
@_spi(YXQueueInternals) import YXQueue

/// Where a verified TLS connection finds the certificates it trusts.
///
/// libcurl built with both a CA file and a CA directory (as Debian's and Ubuntu's libcurl with OpenSSL
/// are: `/etc/ssl/certs/ca-certificates.crt` and `/etc/ssl/certs`) reads and parses the whole file for
/// every connection: it keeps a parsed store for later connections only when the store comes from a
/// file alone (see `CURLOPT_CA_CACHE_TIMEOUT`). OpenSSL 3 takes about 19 ms of CPU to parse the 139
/// certificates of Debian's bundle, once per connection: a 32 MiB download over 8 connections took
/// 115 ms of CPU with the whole setting and 62 ms with the directory first (median of 7 runs,
/// 2026-11-26). The directory holds the same certificates (`update-ca-certificates` writes
/// both), each in a file named after the hash of its subject, which OpenSSL opens only when a chain
/// needs it.
///
/// So, with ``directoryFirst``, a connection first trusts the directory alone. When that fails for want
/// of a trusted issuer, the transfer is made once more with the whole setting (the file and the
/// directory), and fails only if that fails too; the engine remembers the origin, and its later
/// transfers use the whole setting at once (``Fallbacks``; transfers already under way pay their own
/// second handshake). A certificate added to the file but not to the directory therefore costs a
/// handshake, not a failure. The directory alone could accept what the whole setting refuses only where
/// the two disagree about a certificate of the directory: trust settings the file holds for it (its
/// `TRUSTED CERTIFICATE` blocks, which the directory does not carry), or another certificate with its
/// name. ``appliesTo(tlsLibrary:caFile:caDirectory:)`` therefore asks for a file that carries no trust
/// settings and lies inside the directory, as a set that one tool maintains does.
struct TrustStore: Sendable, Equatable {
    /// The CA file; nil: libcurl's built-in one.
    var file: String?
    /// The CA directory; nil: libcurl's built-in one.
    var directory: String?
    /// Whether connections try the directory alone first; nil: as ``systemDirectoryFirst`` says.
    var directoryFirstSetting: Bool?

    init(file: String?, directory: String?, directoryFirst: Bool?) {
        self.file = file
        self.directory = directory
        self.directoryFirstSetting = directoryFirst
    }

    /// libcurl's built-in setting, with the directory first where the system's rule says so (decided on
    /// first use, by the first verified https transfer).
    static let system = TrustStore(file: nil, directory: nil, directoryFirst: nil)

    /// Whether connections try the directory alone first.
    var directoryFirst: Bool { directoryFirstSetting ?? Self.systemDirectoryFirst }

    /// ``appliesTo(tlsLibrary:caFile:caDirectory:)`` for this process's libcurl, once: it reads the CA
    /// file (not parsed).
    static let systemDirectoryFirst: Bool = {
        // `curl_version_info` is safe from any thread only once libcurl is initialized.
        guard TransferLane.initializeLibcurl == CURLE_OK, let info = curl_version_info(CURLVERSION_NINTH)?.pointee
        else { return false }
        // The built-in paths are reported from the ninth version of the structure on (libcurl 7.70).
        let reportsPaths = info.age.rawValue >= CURLVERSION_NINTH.rawValue
        return appliesTo(
            tlsLibrary: info.ssl_version.map { String(cString: $0) },
            caFile: reportsPaths ? info.cainfo.map { String(cString: $0) } : nil,
            caDirectory: reportsPaths ? info.capath.map { String(cString: $0) } : nil)
    }()

    /// Whether the directory is worth trying alone, for libcurl built with these settings: it uses
    /// OpenSSL or a fork of it (the library whose parsed store libcurl does not keep when a directory is
    /// set; other libraries were not measured), it has both a CA file and a CA directory, the file lies in
    /// the directory, and the file holds no trust settings (see ``TrustStore``).
    static func appliesTo(tlsLibrary: String?, caFile: String?, caDirectory: String?) -> Bool {
        // A build with several TLS libraries names the inactive ones in parentheses, first.
        guard let tlsLibrary, ["OpenSSL/", "LibreSSL/", "BoringSSL", "quictls/"].contains(where: tlsLibrary.hasPrefix)
        else { return false }
        guard let caFile, !caFile.isEmpty, let caDirectory, !caDirectory.isEmpty else { return false }
        let directory = URL(fileURLWithPath: caDirectory, isDirectory: true).standardizedFileURL.path
        guard URL(fileURLWithPath: caFile).deletingLastPathComponent().standardizedFileURL.path == directory else {
            return false
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue,
            let contents = FileManager.default.contents(atPath: caFile)
        else { return false }
        return contents.firstRange(of: Array("TRUSTED CERTIFICATE".utf8)) == nil
    }

    /// OpenSSL's verification results that other trust anchors can change: no trusted issuer found
    /// (`X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT`, `…_LOCALLY`, `…_UNABLE_TO_VERIFY_LEAF_SIGNATURE`), a
    /// self-signed certificate (`…_DEPTH_ZERO_SELF_SIGNED_CERT`, `…_SELF_SIGNED_CERT_IN_CHAIN`), a
    /// certificate not trusted or rejected (`…_CERT_UNTRUSTED`, `…_CERT_REJECTED`). An expired
    /// certificate or a wrong host name fails the same way whatever is trusted: it is not tried again.
    static let issuerFailures: Set<Int> = [2, 18, 19, 20, 21, 27, 28]

    /// The origins whose certificates the directory alone failed to verify (for want of a trusted
    /// issuer), in one engine: their later transfers use the whole setting at once, not one failed
    /// handshake each. Empty for almost every run, and then asked without a lock.
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

    /// Sets a verifying easy handle's trust: the directory alone, or the whole setting.
    func apply(to handle: UnsafeMutableRawPointer, directoryOnly: Bool) {
        if let directory { _ = yx_easy_setopt_string(handle, CURLOPT_CAPATH, directory) }
        if directoryOnly {
            _ = yx_easy_setopt_string(handle, CURLOPT_CAINFO, nil)
        } else if let file {
            _ = yx_easy_setopt_string(handle, CURLOPT_CAINFO, file)
        }
    }
}
