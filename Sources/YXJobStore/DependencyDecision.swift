/// The state a new job starts in, from the states of the jobs it depends on: what both stores decide
/// at enqueue.
package struct DependencyDecision: Sendable {
    /// `available` when every prerequisite succeeded, `canceled` when one failed, was canceled or was
    /// discarded, `waiting` otherwise.
    package var state: StoredJobState
    /// Why the job starts canceled.
    package var message: String?

    /// - Throws: ``JobStoreError/unknownDependency(_:)`` for an identifier with no state.
    package init(dependencies: [JobID], states: [Int64: StoredJobState]) throws {
        var waiting = false
        for dependency in dependencies {
            guard let state = states[dependency.rawValue] else { throw JobStoreError.unknownDependency(dependency) }
            switch state {
            case .succeeded:
                continue
            case .failed, .canceled, .discarded:
                self.state = .canceled
                self.message = "prerequisite \(dependency) ended \(state.rawValue)"
                return
            case .waiting, .available, .running:
                waiting = true
            }
        }
        state = waiting ? .waiting : .available
        message = nil
    }
}
