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
    /// The prefix of names in the output directory itself.
    private static let topLevel = "/"

    /// The name the entry will use in `directory` (path components under the output directory).
    mutating func claim(directory: [String], name: String) -> String {
        let prefix = directory.isEmpty ? Self.topLevel : directory.joined(separator: "/") + "/"
        let key = PathHash.of(prefix, name)
        var counter = nextSuffix[key] ?? 0
        var candidate = counter == 0 ? name : "\(name).\(counter)"
        while isTaken(prefix, candidate) {
            counter += 1
            candidate = "\(name).\(counter)"
        }
        if counter > 0 || nextSuffix[key] != nil { nextSuffix[key] = counter + 1 }
        taken.insert(counter == 0 ? key : PathHash.of(prefix, candidate))
        return candidate
    }

    /// Whether `name`, its partial files, or the final file whose partial file `name` would be, is
    /// already claimed.
    private func isTaken(_ prefix: String, _ name: String) -> Bool {
        if taken.contains(PathHash.of(prefix, name)) { return true }
        for suffix in Self.partSuffixes {
            if taken.contains(PathHash.of(prefix, name, adding: suffix)) { return true }
            if name.utf8.count > suffix.utf8.count, name.utf8.reversed().starts(with: suffix.utf8.reversed()),
                taken.contains(PathHash.of(prefix, name, droppingLast: suffix.utf8.count))
            {
                return true
            }
        }
        return false
    }
}
