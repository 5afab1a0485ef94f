#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the output folders held when the run began to use them: each folder is listed once (a few
/// `getdents` calls), so deciding what to do with a list entry costs no failing lookup per file.
///
/// An entry whose file, `.part` and sidecar are all absent from the listing starts a download that
/// creates its `.part` at once (``DownloadJob``'s fresh-destination hint: no `stat` before it); an entry
/// whose file is listed is confirmed with one `stat` and skipped. Only a 64-bit hash of each name is
/// kept, so a folder of 500,000 files costs about 8 MiB here; a hash that matches another name only
/// costs that one `stat`, never a wrong skip. A larger folder, or one that cannot be listed, is not
/// kept: its entries are looked up one by one, as without the listing.
///
/// Files this run creates do not make a listing stale: ``OutputNames`` gives every entry a name no other
/// entry of the run uses, and a folder is listed before the first download into it.
struct ExistingFiles {
    /// What a listing says about an entry's files.
    enum Presence: Equatable {
        /// Neither the file, nor its `.part`, nor its sidecar.
        case none
        /// The file is listed (confirm before trusting: hashes only).
        case file
        /// A `.part` or a sidecar is there: the download looks at the disk.
        case partial
        /// The folder could not be listed (too large, not readable): look at the disk.
        case unknown
    }

    /// Folders with more names than this are not kept.
    static let maximumNames = 500_000

    /// The output directory, as a path.
    let base: String
    private var listings: [String: Listing?] = [:]
    /// Per `dir=`: the first of its folders that is a symbolic link, if any (looked at once).
    private var links: [String: String?] = [:]

    private struct Listing {
        var names: Set<Int>
    }

    init(base: String) {
        self.base = base
    }

    /// The first folder of `directory` (a `dir=`) that is a symbolic link, as a relative path (looked at
    /// once per `dir=`; see ``OutputDirectory/symbolicLink(under:folders:)``).
    mutating func symbolicLink(in directory: [String]) -> String? {
        let key = directory.joined(separator: "/")
        if let known = links[key] { return known }
        let found = OutputDirectory.symbolicLink(under: base, folders: directory)
        links[key] = .some(found)
        return found
    }

    /// What the listing of `directory` (components under ``base``) says about `name`.
    mutating func presence(directory: [String], name: String) -> Presence {
        let key = directory.isEmpty ? "" : directory.joined(separator: "/")
        let listing: Listing?
        if let known = listings[key] {
            listing = known
        } else {
            listing = Self.list(directory.isEmpty ? base : ([base] + directory).joined(separator: "/"))
            listings[key] = listing
        }
        guard let names = listing?.names else { return .unknown }
        if names.isEmpty { return .none }  // a new or empty folder, as most runs find it: nothing to hash
        let hashes = PathHash.ofNameAndPartials("", name)
        if names.contains(hashes.name) { return .file }
        return names.contains(hashes.part) || names.contains(hashes.meta) ? .partial : .none
    }

    /// The hashes of a folder's names; an empty set for a folder that does not exist yet; nil when it
    /// cannot be listed or holds too many names.
    private static func list(_ path: String) -> Listing? {
        guard let folder = opendir(path) else { return errno == ENOENT ? Listing(names: []) : nil }
        defer { closedir(folder) }
        var names = Set<Int>()
        while let entry = readdir(folder) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) {
                    String(cString: $0)
                }
            }
            if name == "." || name == ".." { continue }
            guard names.count < maximumNames else { return nil }
            names.insert(PathHash.of("", name))
        }
        return Listing(names: names)
    }
}
