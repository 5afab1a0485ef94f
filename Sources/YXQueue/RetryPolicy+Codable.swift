import Foundation

/// A retry policy is plain data: it can be kept with a job (the durable job stores keep it in their
/// columns) or written to a configuration file.
///
/// Decoding goes through ``RetryPolicy/init(retries:initialDelay:maxDelay:jitter:maxRetryAfter:scope:)``,
/// so out-of-range values are clamped as they are for a policy made in code; a missing field takes its
/// default.
///
/// ```json
/// {"retries": 3, "initialDelay": 0.5, "maxDelay": 30, "jitter": 0.25, "maxRetryAfter": 3600, "scope": "allErrors"}
/// ```
extension RetryPolicy: Codable {
    private enum CodingKeys: String, CodingKey {
        case retries, initialDelay, maxDelay, jitter, maxRetryAfter, scope
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = RetryPolicy()
        self.init(
            retries: try container.decodeIfPresent(Int.self, forKey: .retries) ?? defaults.retries,
            initialDelay: try container.decodeIfPresent(TimeInterval.self, forKey: .initialDelay) ?? defaults.initialDelay,
            maxDelay: try container.decodeIfPresent(TimeInterval.self, forKey: .maxDelay) ?? defaults.maxDelay,
            jitter: try container.decodeIfPresent(Double.self, forKey: .jitter) ?? defaults.jitter,
            maxRetryAfter: try container.decodeIfPresent(TimeInterval.self, forKey: .maxRetryAfter)
                ?? defaults.maxRetryAfter,
            scope: try container.decodeIfPresent(Scope.self, forKey: .scope) ?? defaults.scope
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(retries, forKey: .retries)
        try container.encode(initialDelay, forKey: .initialDelay)
        try container.encode(maxDelay, forKey: .maxDelay)
        try container.encode(jitter, forKey: .jitter)
        try container.encode(maxRetryAfter, forKey: .maxRetryAfter)
        try container.encode(scope, forKey: .scope)
    }
}
