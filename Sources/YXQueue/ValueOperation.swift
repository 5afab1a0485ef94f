/// An operation whose result has a type: dependents read ``output`` without a cast.
///
/// Subclass it and override ``produce(completion:)`` instead of ``QueueOperation/execute(completion:)``:
///
/// ```swift
/// final class SizeOperation: ValueOperation<Int>, @unchecked Sendable {
///     override func produce(completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
///         completion(Result { try FileManager.default.attributesOfItem(atPath: "/etc/hosts")[.size] as? Int ?? 0 })
///     }
/// }
/// // in a dependent: let size: Int? = sizeOperation.output
/// ```
open class ValueOperation<Output: Sendable>: QueueOperation, @unchecked Sendable {
    /// The work. Call `completion` exactly once, from any thread. The default fails with
    /// ``JobError/invalidOperation(_:)``: override it.
    open func produce(completion: @escaping @Sendable (Result<Output, any Error>) -> Void) {
        completion(.failure(JobError.invalidOperation("\(type(of: self)) does not override produce(completion:)")))
    }

    /// Runs ``produce(completion:)``.
    public final override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        produce { result in completion(result.map(Self.erase)) }
    }

    /// The output as an operation's result: an optional output is unwrapped, so that `nil` is no result.
    private static func erase(_ output: Output) -> (any Sendable)? {
        if let optional = output as? any OptionalResult, optional.isNone { return nil }
        return output
    }

    /// The output, once the operation succeeded.
    public var output: Output? { result as? Output }
}

/// An `Optional` seen through an existential: lets a ``ValueOperation`` whose output is optional report
/// `nil` as no result, not as a boxed `nil`.
protocol OptionalResult {
    var isNone: Bool { get }
}

extension Optional: OptionalResult {
    var isNone: Bool { self == nil }
}
