import Foundation
import YXTerminal

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `-d DIR` of a download or a worker: created if missing before anything runs.
package enum OutputDirectory {
    /// Creates `path` (and its parents) if missing; on failure says why on standard error and returns
    /// `nil` (the command exits 2).
    package static func create(_ path: String, console: Console) -> URL? {
        let directory = URL(fileURLWithPath: path, isDirectory: true)
        // Most runs find the folder there, or make one level: one `mkdir`, without `FileManager`'s
        // first use (with the `opendir` of `DescriptorBudget`, 0.7–0.8 ms of CPU of a run's start);
        // missing parents are made one `mkdir` each.
        let code = makeDirectories(path)
        guard code == 0 else {
            // The system's words (Foundation's would be "NSCocoaErrorDomain error 512").
            console.writeErr("yxdownload: cannot create the output directory \(path): \(String(cString: strerror(code)))\n")
            return nil
        }
        return directory
    }

    /// Makes `path` and its missing parents; 0, or the `errno` of the step that failed (`ENOTDIR` when a
    /// file stands where a folder must be).
    private static func makeDirectories(_ path: String) -> Int32 {
        if mkdir(path, 0o777) == 0 { return 0 }
        let code = errno
        if code == EEXIST { return isDirectory(path) ? 0 : ENOTDIR }
        guard code == ENOENT else { return code }
        let parent = parentPath(of: path)
        guard !parent.isEmpty, parent != path else { return code }
        let made = makeDirectories(parent)
        guard made == 0 else { return made }
        if mkdir(path, 0o777) == 0 { return 0 }
        return errno == EEXIST && isDirectory(path) ? 0 : errno
    }

    /// `path` without its last component: `a/b/` → `a`, `/a` → `/`, `a` → the empty path.
    static func parentPath(of path: String) -> String {
        var bytes = Array(path.utf8)
        while bytes.count > 1, bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return slash == 0 ? "/" : String(decoding: bytes[..<slash], as: UTF8.self)
    }

    /// The first of `folders` (path components under `root`, as `dir=` gives them) that is a symbolic
    /// link, as a relative path; nil when none is (or none exists yet).
    ///
    /// A file is never written through a link (its `.part` is opened with `O_NOFOLLOW`), but a folder
    /// inside the output directory that someone replaced with a link to elsewhere would still lead
    /// there: an entry whose `dir=` meets one is failed instead. (Checked before the download starts:
    /// a link made between the check and the file's creation is not seen.)
    package static func symbolicLink(under root: String, folders: [String]) -> String? {
        var path = root
        for (index, folder) in folders.enumerated() {
            path += "/" + folder
            var info = stat()
            guard lstat(path, &info) == 0 else { return nil }  // missing: made as a real folder
            if (info.st_mode & S_IFMT) == S_IFLNK { return folders[...index].joined(separator: "/") }
        }
        return nil
    }

    /// The failure of a download whose `dir=` meets a symbolic link (`shown`: the link, as the user sees
    /// its path), for a plain run and a worker alike.
    package static func linkedFolderMessage(_ shown: String) -> String {
        "\(shown) is a symbolic link, which yxdownload never follows (dir=): remove it, or change dir="
    }

    /// Why an entry whose `dir=` goes through a file of an earlier entry of the run is not downloaded
    /// (``OutputNames/claimFolders(_:)``).
    package static func folderIsAFileMessage(_ shown: String) -> String {
        "\(shown) is the file of an earlier download of this list, so it cannot be a folder too (dir=): "
            + "give one of them another name (out= or dir=)"
    }

    private static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}
