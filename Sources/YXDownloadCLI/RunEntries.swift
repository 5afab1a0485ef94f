/// The entries of one run, one at a time: the URLs given as arguments, then the list's entries (those
/// its check kept, which come with the arguments, or its second pass, read as the run goes).
struct RunEntries: IteratorProtocol, Sendable {
    private var urls: IndexingIterator<[DownloadListEntry]>
    private var list: InputList.Entries?

    init(urls: [DownloadListEntry], list: InputList.Entries?) {
        self.urls = urls.makeIterator()
        self.list = list
    }

    mutating func next() -> DownloadListEntry? {
        if let url = urls.next() { return url }
        return list?.next()
    }

    /// Why the list ended early (it could not be read again), if it did.
    var failure: String? { list?.failure }
}
