#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Stops the fuzzer when a property of the code under test does not hold.
///
/// libFuzzer treats the abort like any crash: it prints the message and the stack, and writes the input
/// to `crash-<sha1>` so that `scripts/fuzz --reproduce TARGET FILE` replays it.
///
/// - Parameters:
///   - condition: The property.
///   - message: What was expected, with the values that broke it.
func require(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) {
    guard !condition() else { return }
    let text = Array("property failed at \(file):\(line): \(message())\n".utf8)
    _ = text.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    abort()
}

/// The fuzzer's input as an array (empty when libFuzzer passes no buffer).
func inputBytes(_ data: UnsafePointer<UInt8>?, _ count: Int) -> [UInt8] {
    guard let data, count > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: count))
}

/// Whether a Unicode scalar is a C0 or C1 control character, or DEL.
func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value)
}

/// Whether `name` is one safe path component: not empty, not `.` or `..`, and without `/`, `\`, NUL or
/// control characters (SPEC §4 "Naming").
func isSafeComponent(_ name: String) -> Bool {
    // Compared as bytes: the file system sees bytes, and `String` equality is canonical equivalence.
    !name.isEmpty && !name.utf8.elementsEqual(".".utf8) && !name.utf8.elementsEqual("..".utf8)
        && !name.unicodeScalars.contains { $0 == "/" || $0 == "\\" || isControl($0) }
}
