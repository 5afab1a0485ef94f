import Foundation
import YXQueue

extension JobRequest {
    /// A stored job from a `Codable` ``JobDefinition``: its static `name` is the stored name, its value
    /// encoded as JSON the payload.
    ///
    /// Use it to enqueue jobs of several definition types in one transaction:
    ///
    /// ```swift
    /// let results = try await store.enqueue([
    ///     try JobRequest(Thumbnail(path: "a.jpg", width: 128)),
    ///     try JobRequest(SendMail(to: "ops@example.com"), options: JobOptions(priority: 5)),
    /// ])
    /// ```
    ///
    /// - Parameters:
    ///   - definition: The job. A worker decodes it with the same type, registered with
    ///     ``JobRegistry/register(_:on:maximumConcurrentJobs:decoder:encoder:)``.
    ///   - options: Limits, scheduling, retries across attempts, uniqueness, dependencies, timeout.
    ///   - encoder: How the definition is encoded.
    /// - Throws: What the encoder throws.
    public init<Definition: JobDefinition & Encodable>(
        _ definition: Definition,
        options: JobOptions = JobOptions(),
        encoder: JSONEncoder = JSONEncoder()
    ) throws {
        self.init(name: Definition.name, payload: try encoder.encode(definition), options: options)
    }
}
