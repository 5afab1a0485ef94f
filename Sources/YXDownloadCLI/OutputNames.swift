/// Gives every download of a run its own file (SPEC §4 "Naming"): the second entry that would write
/// `NAME` gets `NAME.1`, the next `NAME.2`, and so on.
///
/// A name also keeps its `NAME.part` and `NAME.part.meta` to itself, so no download's final file can
/// land on another's partial file. Only a 64-bit hash of each claimed path is kept (a `Set<Int>`, under
/// 20 bytes an entry), so a list of 200,000 entries costs a few MiB here; two different paths with the
/// same hash (odds around 1 in 10^9 for such a list) would only give one name a needless `.N` suffix.
struct OutputNames {
    private var taken = Set<Int>()
    /// For names that collided: the next suffix to try, so a list whose URLs all end in the same name
    /// does not retry `.1`, `.2`, … from the start each time.
    private var nextSuffix: [Int: Int] = [:]

    private static let partSuffixes = [".part", ".part.meta"]

    /// The name the entry will use in `directory` (path components under the output directory).
    mutating func claim(directory: [String], name: String) -> String {
        let prefix = directory.joined(separator: "/") + "/"
        let key = (prefix + name).hashValue
        var counter = nextSuffix[key] ?? 0
        var candidate = counter == 0 ? name : "\(name).\(counter)"
        while isTaken(prefix, candidate) {
            counter += 1
            candidate = "\(name).\(counter)"
        }
        if counter > 0 || nextSuffix[key] != nil { nextSuffix[key] = counter + 1 }
        taken.insert((prefix + candidate).hashValue)
        return candidate
    }

    /// Whether `name`, its partial files, or the final file whose partial file `name` would be, is
    /// already claimed.
    private func isTaken(_ prefix: String, _ name: String) -> Bool {
        var related = [name]
        for suffix in Self.partSuffixes {
            related.append(name + suffix)
            if name.hasSuffix(suffix) { related.append(String(name.dropLast(suffix.count))) }
        }
        return related.contains { taken.contains((prefix + $0).hashValue) }
    }
}
