import Foundation

/// A request that joined a live job instead of being stored, as ``JobRequestBatches`` shows it to its
/// join check.
public struct JoinedRequest: Sendable {
    /// The request that was not stored.
    public var request: JobRequest
    /// The live job that holds the request's unique key.
    public var existing: JobID
    /// That job's parameters, as stored.
    public var existingPayload: Data

    public init(request: JobRequest, existing: JobID, existingPayload: Data) {
        self.request = request
        self.existing = existing
        self.existingPayload = existingPayload
    }
}

extension JoinedRequest {
    /// A request that joined the live job `existing`, before its parameters are read.
    package typealias Pending = (request: JobRequest, existing: JobID)

    /// The requests of `results` (in order, one result per request) that joined live jobs. For stores.
    package static func pending(_ requests: [JobRequest], _ results: [EnqueueResult]) -> [Pending] {
        zip(requests, results).compactMap { request, result in
            guard case .joined(let existing) = result else { return nil }
            return (request, existing)
        }
    }

    /// The joins with the parameters a store read for their jobs (by identifier); throws when a joined
    /// job was not found. For stores.
    package static func joins(_ pending: [Pending], payloads: [Int64: Data]) throws -> [JoinedRequest] {
        try pending.map { join in
            guard let payload = payloads[join.existing.rawValue] else {
                throw JobStoreError.invalidResponse("job \(join.existing) was joined but is not in the store")
            }
            return JoinedRequest(request: join.request, existing: join.existing, existingPayload: payload)
        }
    }
}
