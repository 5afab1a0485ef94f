/// The identity of a persistent job: the number its store gave it at ``JobStore/enqueue(_:)``.
///
/// Identifiers are never reused by a store, so an identifier names one job for the life of the store.
public struct JobID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The number the store assigned.
    public let rawValue: Int64

    /// Wraps a number read from a store (or typed by a user, as `yxdownload status` does).
    public init(rawValue: Int64) {
        self.rawValue = rawValue
    }

    /// Wraps a number read from a store.
    public init(_ rawValue: Int64) {
        self.rawValue = rawValue
    }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public static func < (lhs: JobID, rhs: JobID) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { String(rawValue) }
}
