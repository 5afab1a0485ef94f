import Foundation

/// Names an operation type and the concurrency limit of the queue that runs it.
///
/// A ``Dispatcher`` keeps one `OperationQueue` per ``type``. The queue is created the first time an
/// operation of that type is submitted, with that model's ``maxConcurrentOperationCount``; later models
/// of the same type share the existing queue and its limit.
///
/// ```swift
/// let thumbnails = OperationModel(type: "thumbnail", maxConcurrentOperationCount: 2)
/// ```
public struct OperationModel: Hashable, Sendable, CustomStringConvertible {
    /// The operation type; operations of one type share one queue.
    public let type: String
    /// How many operations of this type may execute at the same time
    /// (`OperationQueue.defaultMaxConcurrentOperationCount` lets the system decide).
    public let maxConcurrentOperationCount: Int

    /// Creates a model.
    ///
    /// - Parameters:
    ///   - type: The operation type name, the key of its queue.
    ///   - maxConcurrentOperationCount: The per-type limit; must be positive, or
    ///     `OperationQueue.defaultMaxConcurrentOperationCount`.
    public init(type: String, maxConcurrentOperationCount: Int = OperationQueue.defaultMaxConcurrentOperationCount) {
        precondition(
            maxConcurrentOperationCount > 0
                || maxConcurrentOperationCount == OperationQueue.defaultMaxConcurrentOperationCount,
            "maxConcurrentOperationCount must be positive"
        )
        self.type = type
        self.maxConcurrentOperationCount = maxConcurrentOperationCount
    }

    public var description: String { "\(type) (max \(maxConcurrentOperationCount))" }
}
