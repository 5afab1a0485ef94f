import Crypto
import Foundation

/// Deterministic pseudo-random content of any size, produced piece by piece.
///
/// Byte `i` of the content for `seed` depends only on `(seed, i)`. The content is a sequence of
/// 8-byte words stored little-endian; with `mix` the splitmix64 output function,
/// `key = mix(seed ^ 0x5958_5465_7374_5356)` and word `w` is `mix(key &+ (w + 1) &* 0x9E37_79B9_7F4A_7C15)`.
/// Any range can therefore be produced directly, without generating what comes before it, and a
/// whole multi-GiB file never has to exist in memory. The server streams ``BodySource/generated(size:seed:)``
/// bodies from here; tests use the same functions to know what they should have received.
///
/// ```swift
/// server.serve("/big.bin", Resource(.generated(size: 1 << 30, seed: 7)))
/// let expected = GeneratedContent.sha256(size: 1 << 30, seed: 7)
/// let slice = GeneratedContent.bytes(size: 1 << 30, seed: 7, range: 1000..<2000)
/// ```
///
/// - Important: The byte sequence is part of the contract: tests may pin digests of it, so the
///   algorithm must not change.
public enum GeneratedContent {
    /// Returns the bytes of the content of `size` bytes for `seed` at `range` (the whole content by default).
    ///
    /// - Parameters:
    ///   - size: The total size of the content; only used to check `range`.
    ///   - seed: Selects the content.
    ///   - range: Offsets within `0..<size`; `nil` means all of it.
    /// - Returns: Exactly `range.count` bytes (or `size` bytes).
    public static func bytes(size: Int64, seed: UInt64, range: Range<Int64>? = nil) -> Data {
        let range = range ?? 0..<size
        precondition(range.lowerBound >= 0 && range.upperBound <= size, "range \(range) outside 0..<\(size)")
        var data = Data(count: range.count)
        data.withUnsafeMutableBytes { buffer in
            self.fill(buffer, seed: seed, offset: range.lowerBound)
        }
        return data
    }

    /// Returns the byte at `index` of the content for `seed`.
    ///
    /// - Parameters:
    ///   - index: A non-negative offset.
    ///   - seed: Selects the content.
    /// - Returns: The byte that every generated body with this seed has at `index`.
    public static func byte(at index: Int64, seed: UInt64) -> UInt8 {
        precondition(index >= 0, "negative index")
        let word = self.word(self.key(seed), UInt64(index) >> 3)
        return UInt8(truncatingIfNeeded: word >> ((UInt64(index) & 7) * 8))
    }

    /// Computes the SHA-256 of the content of `size` bytes for `seed`, streaming it in 1 MiB pieces.
    ///
    /// - Parameters:
    ///   - size: The total size of the content.
    ///   - seed: Selects the content.
    /// - Returns: The digest as 64 lowercase hexadecimal digits.
    public static func sha256(size: Int64, seed: UInt64) -> String {
        precondition(size >= 0, "negative size")
        let pieceSize = 1 << 20
        let piece = UnsafeMutableRawBufferPointer.allocate(byteCount: pieceSize, alignment: 8)
        defer { piece.deallocate() }
        var hasher = SHA256()
        var offset: Int64 = 0
        while offset < size {
            let count = Int(min(Int64(pieceSize), size - offset))
            let slice = UnsafeMutableRawBufferPointer(rebasing: piece[0..<count])
            self.fill(slice, seed: seed, offset: offset)
            hasher.update(bufferPointer: UnsafeRawBufferPointer(slice))
            offset += Int64(count)
        }
        return hasher.finalize().map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// Fills `buffer` with the content for `seed` starting at `offset`.
    ///
    /// Writes 8 bytes at a time from one splitmix64 output; only an unaligned head and tail are
    /// written byte by byte.
    ///
    /// - Parameters:
    ///   - buffer: Receives `buffer.count` bytes.
    ///   - seed: Selects the content.
    ///   - offset: The content offset of `buffer[0]`.
    static func fill(_ buffer: UnsafeMutableRawBufferPointer, seed: UInt64, offset: Int64) {
        precondition(offset >= 0, "negative offset")
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        let key = self.key(seed)
        let count = buffer.count
        var position = 0
        var index = UInt64(offset)

        // Unaligned head: finish the word that `offset` falls into.
        if index & 7 != 0 {
            let word = self.word(key, index >> 3)
            while position < count && index & 7 != 0 {
                base.storeBytes(of: UInt8(truncatingIfNeeded: word >> ((index & 7) * 8)), toByteOffset: position, as: UInt8.self)
                position += 1
                index += 1
            }
        }

        // Whole words.
        var wordIndex = index >> 3
        let wholeWords = (count - position) / 8
        if wholeWords > 0 {
            // Written out rather than calling `word(_:_:)`, so that debug builds stay fast too.
            let increment = self.increment
            var state = key &+ (wordIndex &+ 1) &* increment
            let words = UnsafeMutableRawPointer(base + position)
            var byteOffset = 0
            let end = wholeWords * 8
            while byteOffset < end {
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                words.storeBytes(of: (z ^ (z >> 31)).littleEndian, toByteOffset: byteOffset, as: UInt64.self)
                state &+= increment
                byteOffset += 8
            }
            position += wholeWords * 8
            wordIndex += UInt64(wholeWords)
        }

        // Tail: the first bytes of the next word.
        if position < count {
            let word = self.word(key, wordIndex)
            var shift: UInt64 = 0
            while position < count {
                base.storeBytes(of: UInt8(truncatingIfNeeded: word >> shift), toByteOffset: position, as: UInt8.self)
                position += 1
                shift += 8
            }
        }
    }

    /// The splitmix64 golden-ratio increment.
    private static let increment: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// Derives the per-seed starting state, so that nearby seeds give unrelated content.
    @inline(__always)
    private static func key(_ seed: UInt64) -> UInt64 {
        self.mix(seed ^ 0x5958_5465_7374_5356)  // "YXTestSV"
    }

    /// Word `index` of the content: the splitmix64 output for state `key + (index + 1) * increment`.
    @inline(__always)
    private static func word(_ key: UInt64, _ index: UInt64) -> UInt64 {
        self.mix(key &+ (index &+ 1) &* self.increment)
    }

    /// The splitmix64 output function.
    @inline(__always)
    private static func mix(_ state: UInt64) -> UInt64 {
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
