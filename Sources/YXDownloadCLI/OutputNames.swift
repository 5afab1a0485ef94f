/// Gives every download of a run its own file (SPEC §4 "Naming"): the second entry that would write
/// `NAME` gets `NAME.1`, the next `NAME.2`, and so on.
///
/// A name also reserves its `NAME.part` and `NAME.part.meta`, so no download's final file can land on
/// another's partial file. Only 64-bit hashes of the paths are kept (about 50 bytes per entry), so a
/// list of 200,000 entries costs a few MiB here; two different paths with the same hash (odds around
/// 1 in 10^9 for such a list) would only make one name take a needless `.N` suffix.
struct OutputNames {
    private var taken = Set<Int>()
    /// For names that collided: the next suffix to try, so a list whose URLs all end in the same name
    /// does not retry `.1`, `.2`, … from the start each time.
    private var nextSuffix: [Int: Int] = [:]

    /// The name the entry will use in `directory` (path components under the output directory).
    mutating func claim(directory: [String], name: String) -> String {
        let prefix = directory.joined(separator: "/") + "/"
        let key = (prefix + name).hashValue
        var counter = nextSuffix[key] ?? 0
        var candidate = counter == 0 ? name : "\(name).\(counter)"
        while [candidate, candidate + ".part", candidate + ".part.meta"].contains(where: {
            taken.contains((prefix + $0).hashValue)
        }) {
            counter += 1
            candidate = "\(name).\(counter)"
        }
        if counter > 0 || nextSuffix[key] != nil { nextSuffix[key] = counter + 1 }
        for reserved in [candidate, candidate + ".part", candidate + ".part.meta"] {
            taken.insert((prefix + reserved).hashValue)
        }
        return candidate
    }
}
