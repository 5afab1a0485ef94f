/// Matches the rows a bulk `INSERT … ON CONFLICT DO NOTHING RETURNING id, unique_key` returned to the
/// requests that were sent, in order.
///
/// The rows are inserted in request order, so their identifiers grow in that order; a request is
/// missing from the rows only when its unique key conflicted (with a live job, or with an earlier
/// request of the same batch). Sorted by identifier, the rows therefore line up with the requests that
/// were inserted; the unique keys they carry check it.
package enum InsertAlignment {
    /// One identifier per input (in order), or `nil` where the unique key conflicted.
    ///
    /// - Parameters:
    ///   - inputs: The unique key of each request sent, in order.
    ///   - returned: The rows returned, in any order.
    /// - Throws: ``JobStoreError/invalidResponse(_:)`` when the rows do not line up.
    package static func align(inputs: [String?], returned: [(id: Int64, key: String?)]) throws -> [Int64?] {
        let rows = returned.sorted { $0.id < $1.id }
        var cursor = 0
        var insertedKeys: Set<String> = []
        var result: [Int64?] = []
        result.reserveCapacity(inputs.count)
        for key in inputs {
            let alreadyTaken = key.map { insertedKeys.contains($0) } ?? false
            if !alreadyTaken, cursor < rows.count, rows[cursor].key == key {
                result.append(rows[cursor].id)
                cursor += 1
                if let key { insertedKeys.insert(key) }
            } else if key != nil {
                result.append(nil)
            } else {
                throw JobStoreError.invalidResponse("inserted rows do not match the requests")
            }
        }
        guard cursor == rows.count else {
            throw JobStoreError.invalidResponse("more rows were inserted than requests line up with")
        }
        return result
    }
}
