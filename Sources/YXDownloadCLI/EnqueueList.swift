import YXDownload

/// The checked downloads of `yxdownload enqueue`, read as the store takes them: a long list is never
/// held in memory (SPEC §4: memory follows the downloads in flight, not the list), only the names it
/// has claimed so far.
package struct EnqueueList {
    let checked: CheckedSources

    /// How many downloads the list and the arguments give.
    package var count: Int { checked.listed }

    /// A pass over the downloads, from the first: arguments first, then the list, each named as a
    /// download run names it (collisions become `NAME.1`, …, in list order).
    package func entries() -> Entries {
        Entries(entries: checked.entries())
    }

    /// One pass over the downloads.
    package struct Entries: IteratorProtocol {
        private var entries: RunEntries
        private var names = OutputNames()

        init(entries: RunEntries) {
            self.entries = entries
        }

        package mutating func next() -> EnqueueEntry? {
            guard clash == nil, let entry = entries.next() else { return nil }
            if let folder = names.claimFolders(entry.dir) {
                clash = URLRedaction.redacted(entry.url) + ": " + OutputDirectory.folderIsAFileMessage(folder)
                return nil
            }
            let name = names.claim(directory: entry.dir, name: entry.out ?? FileNaming.name(for: entry.url))
            return EnqueueEntry(url: entry.url.absoluteString, path: entry.dir + [name], checksum: entry.checksum?.description)
        }

        /// An entry whose `dir=` goes through an earlier entry's file: the pass ends there.
        private var clash: String?

        /// Why the pass ended early, if it did: the list could not be read again, or an entry's folder is
        /// another entry's file. Then the pass is incomplete and nothing may be stored.
        package var failure: String? { clash ?? entries.failure }
    }
}
