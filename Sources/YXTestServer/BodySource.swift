import Foundation

/// Where the bytes of a response body come from.
///
/// A body is either a literal `Data` or content that ``GeneratedContent`` produces on the fly, so a
/// route can serve several GiB without the server ever holding the file in memory.
///
/// ```swift
/// let small = BodySource.bytes(Data("hello".utf8))
/// let huge = BodySource.generated(size: 4 << 30, seed: 42)   // 4 GiB, never materialised
/// ```
public enum BodySource: Sendable, Equatable {
    /// Literal content, sent as it is.
    case bytes(Data)

    /// Deterministic pseudo-random content of `size` bytes, produced on demand.
    ///
    /// Byte `i` depends only on `(seed, i)`: see ``GeneratedContent`` for how to compute the
    /// expected bytes or SHA-256 of such a body without a server.
    case generated(size: Int64, seed: UInt64)

    /// The number of bytes in the body.
    public var size: Int64 {
        switch self {
        case .bytes(let data):
            return Int64(data.count)
        case .generated(let size, _):
            return size
        }
    }

    /// Produces the bytes at `range` (offsets into the body) as `Data`.
    ///
    /// - Parameter range: A range within `0..<size`.
    /// - Returns: Exactly `range.count` bytes.
    public func bytes(in range: Range<Int64>) -> Data {
        precondition(range.lowerBound >= 0 && range.upperBound <= self.size, "range \(range) outside the body")
        switch self {
        case .bytes(let data):
            let start = data.startIndex + Int(range.lowerBound)
            return Data(data[start..<start + range.count])
        case .generated(let size, let seed):
            return GeneratedContent.bytes(size: size, seed: seed, range: range)
        }
    }
}
