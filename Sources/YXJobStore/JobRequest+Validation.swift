extension JobRequest {
    /// Checks what both stores require of requests before they store any.
    ///
    /// - Throws: ``JobStoreError/invalidArgument(_:)`` for an empty name or an empty unique or
    ///   concurrency key.
    package static func validate(_ requests: [JobRequest]) throws {
        for request in requests {
            if request.name.isEmpty { throw JobStoreError.invalidArgument("a job name is empty") }
            if request.options.uniqueKey?.isEmpty == true {
                throw JobStoreError.invalidArgument("the unique key of a \(request.name) job is empty")
            }
            if request.options.concurrencyKey?.isEmpty == true {
                throw JobStoreError.invalidArgument("the concurrency key of a \(request.name) job is empty")
            }
        }
    }
}
