import Foundation

/// Where a download's final file goes: its path, and its `URL`, which is made only when someone asks
/// for it when the maker gave the path alone.
///
/// `yxdownload` names each file by its path and never reads the URL; `URL(fileURLWithPath:)` costs
/// about 5,000 instructions on Linux (the path is parsed and %-encoded), 2.5 % of everything a run of
/// 2,000 small files executes (callgrind, 2026-11-27). A ``DownloadJob`` made with a URL keeps it.
struct FileLocation: Sendable, Hashable {
    /// The file's path, as the maker gave it or as its URL's `path`.
    let path: String
    /// The URL the maker gave, if it gave one.
    private let givenURL: URL?

    /// A file named by a URL (its path is read once, here).
    init(url: URL) {
        self.path = url.path
        self.givenURL = url
    }

    /// A file named by a path; its URL is made on each use of ``url``.
    init(path: String) {
        self.path = path
        self.givenURL = nil
    }

    /// The file's URL: the one given, or one made from the path (relative to the current directory
    /// when the path is relative, as `URL(fileURLWithPath:)` makes it).
    var url: URL { givenURL ?? URL(fileURLWithPath: path, isDirectory: false) }
}
