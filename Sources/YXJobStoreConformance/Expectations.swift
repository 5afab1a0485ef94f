/// Fails the scenario with `message` unless `condition` holds.
func expect(
    _ condition: Bool,
    _ message: @autoclosure () -> String,
    file: StaticString = #fileID,
    line: UInt = #line
) throws {
    if !condition { throw ConformanceError("\(file):\(line): \(message())") }
}

/// Fails the scenario unless `actual == expected`.
func expectEqual<T: Equatable>(
    _ actual: T,
    _ expected: T,
    _ what: @autoclosure () -> String,
    file: StaticString = #fileID,
    line: UInt = #line
) throws {
    if actual != expected {
        throw ConformanceError("\(file):\(line): \(what()): expected \(expected), got \(actual)")
    }
}

/// The value, or a failure naming what was missing.
func unwrap<T>(_ value: T?, _ what: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) throws -> T {
    guard let value else { throw ConformanceError("\(file):\(line): \(what()) is missing") }
    return value
}
