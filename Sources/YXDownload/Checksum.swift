import Crypto
import Foundation

/// An expected digest of a file, checked before the file gets its final name.
///
/// ```swift
/// let expected = Checksum(parsing: "sha-256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
/// ```
public struct Checksum: Sendable, Hashable, CustomStringConvertible {
    /// The hash functions supported (aria2's names).
    public enum Algorithm: String, Sendable, CaseIterable {
        /// MD5 (only to check files against published digests; not secure).
        case md5
        /// SHA-1 (only to check files against published digests; not secure).
        case sha1 = "sha-1"
        /// SHA-256.
        case sha256 = "sha-256"
        /// SHA-512.
        case sha512 = "sha-512"

        /// Hex digits in a digest of this algorithm.
        public var hexLength: Int {
            switch self {
            case .md5: 32
            case .sha1: 40
            case .sha256: 64
            case .sha512: 128
            }
        }
    }

    /// The hash function.
    public let algorithm: Algorithm
    /// The digest in lower-case hex.
    public let hex: String

    /// Creates a checksum; nil when `hex` is not a digest of that algorithm.
    public init?(algorithm: Algorithm, hex: String) {
        let lower = hex.lowercased()
        guard lower.count == algorithm.hexLength, lower.allSatisfy(\.isHexDigit) else { return nil }
        self.algorithm = algorithm
        self.hex = lower
    }

    /// Parses `ALGORITHM=HEX`, e.g. `sha-256=…` (also `sha256`, `sha1`, `SHA-512`).
    public init?(parsing text: String) {
        guard let equals = text.firstIndex(of: "=") else { return nil }
        let name = text[..<equals].lowercased().replacing("_", with: "-")
        let normalized = name.hasPrefix("sha") && !name.hasPrefix("sha-") ? "sha-" + name.dropFirst(3) : name
        guard let algorithm = Algorithm(rawValue: normalized) else { return nil }
        self.init(algorithm: algorithm, hex: String(text[text.index(after: equals)...]))
    }

    public var description: String { "\(algorithm.rawValue)=\(hex)" }
}

/// Streams bytes through one or more hash functions at once.
struct MultiHasher {
    private var md5: Insecure.MD5?
    private var sha1: Insecure.SHA1?
    private var sha256: SHA256?
    private var sha512: SHA512?

    init(_ algorithms: Set<Checksum.Algorithm>) {
        if algorithms.contains(.md5) { md5 = Insecure.MD5() }
        if algorithms.contains(.sha1) { sha1 = Insecure.SHA1() }
        if algorithms.contains(.sha256) { sha256 = SHA256() }
        if algorithms.contains(.sha512) { sha512 = SHA512() }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        md5?.update(bufferPointer: bytes)
        sha1?.update(bufferPointer: bytes)
        sha256?.update(bufferPointer: bytes)
        sha512?.update(bufferPointer: bytes)
    }

    func finalize() -> [Checksum.Algorithm: String] {
        var digests: [Checksum.Algorithm: String] = [:]
        if let md5 { digests[.md5] = Self.hex(md5.finalize()) }
        if let sha1 { digests[.sha1] = Self.hex(sha1.finalize()) }
        if let sha256 { digests[.sha256] = Self.hex(sha256.finalize()) }
        if let sha512 { digests[.sha512] = Self.hex(sha512.finalize()) }
        return digests
    }

    /// Lowercase hexadecimal, two digits a byte. (`String(format:)` costs about 12,000 instructions a
    /// byte, 400,000 for one SHA-256.)
    private static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Hashes a whole file, reading it in 1 MiB pieces.
    static func digests(ofFileAt path: String, algorithms: Set<Checksum.Algorithm>) throws -> [Checksum.Algorithm: String] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        return try digests(ofDescriptor: fd, algorithms: algorithms)
    }

    /// Hashes the whole file open as `fd`, from its start (`pread`: the descriptor's offset is not
    /// moved). The file that was written is the one hashed, whatever its name now leads to.
    static func digests(ofDescriptor fd: Int32, algorithms: Set<Checksum.Algorithm>) throws -> [Checksum.Algorithm: String] {
        var hasher = MultiHasher(algorithms)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: off_t = 0
        while true {
            let count = pread(fd, buffer.baseAddress, buffer.count, offset)
            if count < 0 {
                if errno == EINTR { continue }
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            if count == 0 { break }
            offset += off_t(count)
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
        return hasher.finalize()
    }
}
