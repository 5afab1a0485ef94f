/// A failure of the conformance suite with what was expected.
public struct ConformanceError: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// Waits until `condition` holds, looking every 20 ms, at most `timeout` (generous: the machine may be
/// loaded). This waits on an event; it asserts nothing about how long the event took.
///
/// - Throws: ``ConformanceError`` naming `what` when the time is up; what `condition` throws.
public func waitUntil(
    _ what: String,
    timeout: Duration = .seconds(60),
    condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return }
        if ContinuousClock.now >= deadline { throw ConformanceError("timed out waiting until \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}
