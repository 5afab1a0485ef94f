import Foundation

/// A persistent job to store: a registered job name, its encoded parameters and its options.
///
/// The name, not a Swift type name, is what the store keeps, so renaming a type does not orphan stored
/// jobs. The parameters are opaque bytes to the store; the usual encoding is JSON from a `Codable`
/// value (``init(name:parameters:options:encoder:)``).
///
/// ```swift
/// struct Resize: Codable { var path: String; var width: Int }
/// let request = try JobRequest(name: "resize", parameters: Resize(path: "a.png", width: 640))
/// let results = try await store.enqueue([request])
/// ```
public struct JobRequest: Sendable, Hashable {
    /// The name a worker's handler is registered under.
    public var name: String
    /// The encoded parameters, handed to the handler as they are.
    public var payload: Data
    /// Limits, scheduling, retries, uniqueness, dependencies and timeout.
    public var options: JobOptions

    /// A job with parameters already encoded.
    public init(name: String, payload: Data = Data(), options: JobOptions = JobOptions()) {
        self.name = name
        self.payload = payload
        self.options = options
    }

    /// A job whose parameters are encoded as JSON.
    ///
    /// - Throws: What the encoder throws.
    public init<Parameters: Encodable>(
        name: String,
        parameters: Parameters,
        options: JobOptions = JobOptions(),
        encoder: JSONEncoder = JSONEncoder()
    ) throws {
        self.init(name: name, payload: try encoder.encode(parameters), options: options)
    }
}
