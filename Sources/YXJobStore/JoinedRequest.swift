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
