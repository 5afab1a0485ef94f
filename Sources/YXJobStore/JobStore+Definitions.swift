import Foundation
import YXQueue

/// Storing `Codable` ``JobDefinition``s: what a store keeps of one is its static `name` and its value
/// as JSON.
extension JobStore {
    /// Stores a job from its definition.
    ///
    /// ```swift
    /// struct Thumbnail: JobDefinition, Codable {
    ///     static let name = "thumbnail"
    ///     let path: String
    ///     var work: JobWork<Int> { .run(on: "cpu") { _ in try render(path) } }
    /// }
    ///
    /// let result = try await store.enqueue(Thumbnail(path: "a.jpg"))
    /// print(result.id)
    /// ```
    ///
    /// - Parameters:
    ///   - definition: The job; workers run it with the type registered under its name
    ///     (``JobRegistry/register(_:on:maximumConcurrentJobs:decoder:encoder:)``).
    ///   - options: Limits, scheduling, retries across attempts, uniqueness, dependencies, timeout.
    /// - Returns: What the store did (``EnqueueResult/enqueued(_:)`` with the new job's identifier, or
    ///   the live job that holds its unique key).
    /// - Throws: The encoder's error, or the store's.
    @discardableResult
    public func enqueue<Definition: JobDefinition & Encodable>(
        _ definition: Definition,
        options: JobOptions = JobOptions()
    ) async throws -> EnqueueResult {
        try await enqueue(try JobRequest(definition, options: options))
    }

    /// Stores jobs of one definition type, all in one transaction, with the same options; one result
    /// per definition, in order. (For several types at once, make ``JobRequest``s with
    /// ``JobRequest/init(_:options:encoder:)``.)
    ///
    /// ```swift
    /// let results = try await store.enqueue(paths.map { Thumbnail(path: $0) })
    /// ```
    ///
    /// - Throws: The encoder's error (then nothing is stored), or the store's.
    @discardableResult
    public func enqueue<Definition: JobDefinition & Encodable>(
        _ definitions: [Definition],
        options: JobOptions = JobOptions()
    ) async throws -> [EnqueueResult] {
        let encoder = JSONEncoder()
        return try await enqueue(try definitions.map { try JobRequest($0, options: options, encoder: encoder) })
    }
}
