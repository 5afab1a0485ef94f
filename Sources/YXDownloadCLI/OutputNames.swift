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

    /// The longest name, in bytes, that leaves room for `NAME.part.meta.tmp` within the 255 bytes a
    /// file name may have on Linux and macOS: a longer one could not keep its partial files, so an
    /// interrupted download would not resume.
    static let longestName = 255 - ".part.meta.tmp".utf8.count

    /// `name` with `suffix` (a collision's `.N`), shortened to ``longestName`` bytes when longer: the end
    /// of the part before the extension goes, at a character's boundary; an extension of up to 16 bytes
    /// stays.
    static func fitted(_ name: String, suffix: String) -> String {
        guard name.utf8.count + suffix.utf8.count > longestName else { return name + suffix }
        var stem = Substring(name)
        var ext = Substring("")
        if let dot = name.lastIndex(of: "."), dot != name.startIndex, name.utf8[dot...].count <= 16 {
            stem = name[..<dot]
            ext = name[dot...]
        }
        let room = longestName - suffix.utf8.count - ext.utf8.count
        while stem.utf8.count > room, !stem.isEmpty { stem.removeLast() }
        return String(stem) + ext + suffix
    }
    /// The prefix of names in the output directory itself.
    private static let topLevel = "/"

    /// The name the entry will use in `directory` (path components under the output directory).
    mutating func claim(directory: [String], name: String) -> String {
        let prefix = directory.isEmpty ? Self.topLevel : directory.joined(separator: "/") + "/"
        let hashes = PathHash.ofNameAndPartials(prefix, name)
        let key = hashes.name
        var counter = nextSuffix[key] ?? 0
        var candidate = counter == 0 ? Self.fitted(name, suffix: "") : Self.fitted(name, suffix: ".\(counter)")
        while isTaken(prefix, candidate, hashes: candidate == name ? hashes : nil) {
            counter += 1
            candidate = Self.fitted(name, suffix: ".\(counter)")
        }
        if counter > 0 || nextSuffix[key] != nil { nextSuffix[key] = counter + 1 }
        taken.insert(candidate == name ? key : PathHash.of(prefix, candidate))
        return candidate
    }

    /// Whether `name`, its partial files, or the final file whose partial file `name` would be, is
    /// already claimed. `hashes`: those of `name` and its partial files, when known.
    private func isTaken(_ prefix: String, _ name: String, hashes: (name: Int, part: Int, meta: Int)?) -> Bool {
        let own = hashes ?? PathHash.ofNameAndPartials(prefix, name)
        if taken.contains(own.name) || taken.contains(own.part) || taken.contains(own.meta) { return true }
        for suffix in Self.partSuffixes
        where name.utf8.count > suffix.utf8.count && name.utf8.reversed().starts(with: suffix.utf8.reversed()) {
            if taken.contains(PathHash.of(prefix, name, droppingLast: suffix.utf8.count)) { return true }
        }
        return false
    }
}
