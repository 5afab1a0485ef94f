import Foundation

/// Turns URLs and user-given names into safe file names (SPEC §4 "Naming").
///
/// ```swift
/// FileNaming.name(for: URL(string: "https://x.org/a%20b.txt?v=1")!)   // "a b.txt"
/// FileNaming.name(for: URL(string: "https://x.org/")!)                // "index.html"
/// ```
public enum FileNaming {
    /// The last path component of the URL as written (no query), percent-decoded once, sanitized;
    /// `index.html` when it is empty.
    public static func name(for url: URL) -> String {
        let path = url.path(percentEncoded: true)
        let last = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        let decoded = last.removingPercentEncoding ?? last
        let name = sanitize(decoded)
        return name.isEmpty ? "index.html" : name
    }

    /// Makes one path component safe: `/`, `\`, NUL and control characters become `_`; `.` and `..`
    /// become `_` and `__`. Returns "" for an empty name.
    public static func sanitize(_ name: String) -> String {
        var result = ""
        result.unicodeScalars.reserveCapacity(name.unicodeScalars.count)
        for scalar in name.unicodeScalars {
            if scalar == "/" || scalar == "\\" || scalar.value < 0x20 || scalar.value == 0x7F
                || (0x80...0x9F).contains(scalar.value)
            {
                result.unicodeScalars.append("_")
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        if result == "." { return "_" }
        if result == ".." { return "__" }
        return result
    }
}
