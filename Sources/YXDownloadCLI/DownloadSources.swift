import Foundation
import YXDownload

/// Where a run's URLs come from (SPEC §4, round 2): URLs given as arguments, a list (`-i FILE`, or a
/// lone argument that is not an http(s) URL; `-` is standard input), or both. They share one run: the
/// same naming and collision rules, one summary, one exit status. Arguments come first, in order, then
/// the list.
///
/// ```
/// yxdownload https://example.com/a.iso https://example.com/b.iso   # URLs
/// yxdownload -i urls.txt https://example.com/extra.iso                 # a list and a URL
/// yxdownload urls.txt                                                   # a list, as before
/// ```
struct DownloadSources: Equatable {
    /// The URLs given as arguments, as entries of their own (no `out=`, `dir=` or `checksum=`).
    var urls: [DownloadListEntry]
    /// The list's path (`-` for standard input), if there is a list.
    var listPath: String?

    /// Why the arguments do not say what to download (a usage error: exit 2, nothing is requested).
    struct Problem: Error, CustomStringConvertible, Equatable {
        var description: String
    }

    /// How the problem of no source at all begins (`enqueue` says "nothing to queue" instead).
    static let nothingToDownload = "nothing to download"

    /// Sorts the positional arguments into URLs and a list.
    ///
    /// - Parameters:
    ///   - arguments: The positional arguments, in order.
    ///   - inputFile: The value of `-i`, if given.
    static func from(arguments: [String], inputFile: String?) -> Result<DownloadSources, Problem> {
        if inputFile == nil && arguments.isEmpty {
            return .failure(Problem(description: "\(nothingToDownload): give URLs, a list file, or -i FILE (see --help)"))
        }
        if inputFile == nil, arguments.count == 1, !looksLikeURL(arguments[0]) {
            return .success(DownloadSources(urls: [], listPath: arguments[0]))
        }
        var urls: [DownloadListEntry] = []
        var problems: [String] = []
        for argument in arguments {
            guard looksLikeURL(argument) else {
                let shown = URLRedaction.redactingCredentials(in: argument)
                let hint = inputFile == nil ? " (give a list with -i \(shown))" : " (one list only: -i is given)"
                problems.append("'\(shown)' is not an http or https URL\(hint)")
                continue
            }
            switch DownloadListParser.downloadURL(argument) {
            case .success(let url): urls.append(DownloadListEntry(url: url, line: 0, out: nil, dir: [], checksum: nil))
            case .failure(let problem): problems.append("bad URL argument: \(problem)")
            }
        }
        guard problems.isEmpty else { return .failure(Problem(description: problems.joined(separator: "\n"))) }
        return .success(DownloadSources(urls: urls, listPath: inputFile))
    }

    /// Whether an argument is meant as a URL (`scheme://…`, or `http:` and `https:` with a slash too few)
    /// rather than a file name.
    static func looksLikeURL(_ argument: String) -> Bool {
        let lowercased = argument.lowercased()
        if lowercased.hasPrefix("http:") || lowercased.hasPrefix("https:") { return true }
        guard let separator = argument.firstRange(of: "://") else { return false }
        let scheme = argument[..<separator.lowerBound]
        return !scheme.isEmpty && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }
}
