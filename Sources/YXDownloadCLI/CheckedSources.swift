import YXTerminal

/// The URLs of a command line and its list, checked before anything happens: what `yxdownload` downloads
/// and what `yxdownload enqueue` stores. Every bad list line is reported as `FILE:LINE: reason`; then
/// nothing is done and the command exits 2.
struct CheckedSources {
    /// The URL arguments and the list, as sorted by ``DownloadSources``.
    var sources: DownloadSources
    /// The opened list: its checked entries, or a second pass over it.
    var list: InputList?
    /// Valid entries, arguments and list together.
    var listed: Int

    /// The entries, arguments first, then the list's (those the check kept, or else read again).
    func entries() -> RunEntries {
        if let kept = list?.checkedEntries { return RunEntries(urls: sources.urls + kept, list: nil) }
        return RunEntries(urls: sources.urls, list: list?.entries())
    }

    /// Checks the list, if any, and prints what is wrong with it.
    ///
    /// - Parameters:
    ///   - outcome: The end of the message for a bad list: what was not done ("nothing was downloaded").
    ///   - onHTTPS: Called once, as soon as an `https` URL is found (among the arguments or in the list).
    /// - Returns: The checked sources, or `nil` after a problem was printed (exit 2).
    static func check(
        _ sources: DownloadSources, console: Console, outcome: String, onHTTPS: (() -> Void)? = nil
    ) -> CheckedSources? {
        var checked = CheckedSources(sources: sources, list: nil, listed: sources.urls.count)
        var onHTTPS = onHTTPS
        if let call = onHTTPS, sources.urls.contains(where: \.usesTLS) {
            onHTTPS = nil
            call()
        }
        guard let path = sources.listPath else { return checked }
        let check: InputList.Check
        let opened: InputList
        do {
            opened = try InputList(path: path)
            check = try opened.check(onHTTPS: onHTTPS)
        } catch {
            console.writeErr("yxdownload: \(error)\n")
            return nil
        }
        let name = opened.displayName
        guard check.errors.isEmpty else {
            for error in check.errors { console.writeErr("\(error)\n") }
            let count = check.errors.count
            console.writeErr("yxdownload: \(count) invalid line\(count == 1 ? "" : "s") in \(name); \(outcome).\n")
            return nil
        }
        if check.entries == 0 && sources.urls.isEmpty { console.writeErr("yxdownload: \(name) has no URLs; nothing to do.\n") }
        checked.list = opened
        checked.listed += check.entries
        return checked
    }
}
