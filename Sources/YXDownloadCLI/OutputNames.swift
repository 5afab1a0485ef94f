/// Gives every download of a run its own file (SPEC §4 "Naming"): the second entry that would write
/// `NAME` gets `NAME.1`, the next `NAME.2`, and so on. A file never takes the name of a folder that an
/// earlier entry's `dir=` goes through, and a `dir=` cannot go through an earlier entry's file
/// (``claimFolders(_:)``).
///
/// A name also keeps its `NAME.part` and `NAME.part.meta` to itself, so no download's final file can
/// land on another's partial file. Only a 64-bit hash of each claimed path is kept (a `Set<Int>`, under
/// 20 bytes an entry), so a list of 200,000 entries costs a few MiB here; two different paths with the
/// same hash (odds around 1 in 10^9 for such a list) would only give one name a needless `.N` suffix.
struct OutputNames {
    private var taken = Set<Int>()
    /// The folders that claimed entries' `dir=` paths pass through: no file takes one of their names,
    /// for itself or for a partial file (it gets `NAME.N`).
    private var folders = Set<Int>()
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

    /// Claims the folders of `directory` (path components under the output directory) for an entry.
    ///
    /// A folder of `dir=` is the user's choice and does not become `NAME.N`: when an earlier entry's file
    /// (or one of its partial files) has the name of one of the folders, this entry cannot be downloaded
    /// (found by a user test: it was downloaded whole, then failed, and so did every later run).
    ///
    /// - Returns: nil, or the path of the first folder whose name a file of this run has.
    mutating func claimFolders(_ directory: [String]) -> String? {
        guard !directory.isEmpty else { return nil }
        var prefix = Self.topLevel
        var claimed: [Int] = []
        for (index, folder) in directory.enumerated() {
            if isFileOrPartial(prefix, folder) { return directory[...index].joined(separator: "/") }
            claimed.append(PathHash.of(prefix, folder))
            prefix = index == 0 ? folder + "/" : prefix + folder + "/"
        }
        folders.formUnion(claimed)
        return nil
    }

    /// Whether `name`, its partial files, or the final file whose partial file `name` would be, is
    /// already claimed, or a folder has the name of the file or of one of its partial files. `hashes`:
    /// those of `name` and its partial files, when known.
    private func isTaken(_ prefix: String, _ name: String, hashes: (name: Int, part: Int, meta: Int)?) -> Bool {
        let own = hashes ?? PathHash.ofNameAndPartials(prefix, name)
        if taken.contains(own.name) || taken.contains(own.part) || taken.contains(own.meta) { return true }
        if folders.contains(own.name) || folders.contains(own.part) || folders.contains(own.meta) { return true }
        return isPartialOfClaimedFile(prefix, name)
    }

    /// Whether a claimed file is called `name`, or `name` is the partial file of one.
    private func isFileOrPartial(_ prefix: String, _ name: String) -> Bool {
        taken.contains(PathHash.of(prefix, name)) || isPartialOfClaimedFile(prefix, name)
    }

    /// Whether `name` is `NAME.part` or `NAME.part.meta` of a claimed `NAME`.
    private func isPartialOfClaimedFile(_ prefix: String, _ name: String) -> Bool {
        for suffix in Self.partSuffixes
        where name.utf8.count > suffix.utf8.count && name.utf8.reversed().starts(with: suffix.utf8.reversed()) {
            if taken.contains(PathHash.of(prefix, name, droppingLast: suffix.utf8.count)) { return true }
        }
        return false
    }
}
