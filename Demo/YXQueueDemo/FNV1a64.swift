import Foundation

/// The 64-bit FNV-1a hash, streamed: a fingerprint that notices accidental changes to a file.
///
/// Not cryptographic (anyone can make two files with the same value); the demo uses it because it
/// fits in a few lines and needs no library. For real integrity checks give `DownloadJob` a SHA-256
/// `Checksum`, as the demo's downloads do.
struct FNV1a64 {
    private static let offsetBasis: UInt64 = 0xCBF2_9CE4_8422_2325
    private static let prime: UInt64 = 0x0000_0100_0000_01B3

    /// The hash of everything given to ``update(_:)`` so far.
    private(set) var value = FNV1a64.offsetBasis

    /// Adds bytes to the hash.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var hash = value
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* Self.prime
        }
        value = hash
    }

    /// The value as 16 lower-case hex digits.
    var hex: String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// Hashed per piece, with a progress report and a cancellation check after each.
    private static let pieceSize = 256 << 10

    /// The hash of `data` in hex, reporting progress after each piece; throws `CancellationError` when
    /// `isCancelled` turns true.
    static func hex(
        of data: Data, progress: (Double) -> Void, isCancelled: () -> Bool
    ) throws -> String {
        var hash = FNV1a64()
        let finished = data.withUnsafeBytes { bytes -> Bool in
            var offset = 0
            while offset < bytes.count {
                if isCancelled() { return false }
                let end = min(bytes.count, offset + pieceSize)
                hash.update(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
                offset = end
                progress(Double(offset) / Double(bytes.count))
            }
            return true
        }
        guard finished else { throw CancellationError() }
        return hash.hex
    }
}
