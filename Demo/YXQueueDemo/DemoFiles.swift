import Foundation
import YXDownload
import YXTestServer

/// One sample file of the demo: generated on the fly by the loopback server, paced so the progress bars
/// have something to show, and sometimes given a scripted fault.
///
/// The content is `GeneratedContent` for a seed: deterministic, so the demo knows its SHA-256 before
/// downloading it and hands that to the `DownloadJob` as the expected checksum.
struct DemoFile: Sendable {
    /// The file name, also the last component of its URL path.
    let name: String
    /// The size in bytes.
    let size: Int64
    /// Selects the generated content.
    let seed: UInt64
    /// How fast the server sends each response body, in bytes per second.
    let bytesPerSecond: Int
    /// Connections the download may use (more than 1 splits it into ranged parts).
    var connections = 1
    /// When set, the server cuts the first response after this many bytes: the download retries and
    /// resumes from there with a `Range` request.
    var cutAfter: Int64?
    /// What is special about this file, for the plan printed at the start.
    var note: String?

    /// The route on the server.
    var path: String { "/files/" + name }

    /// What the server answers for ``path``.
    var resource: Resource {
        Resource(
            .generated(size: size, seed: seed),
            etag: "demo-\(seed)",  // a validator, so a resumed request can use If-Range
            bytesPerSecond: bytesPerSecond,
            failures: cutAfter.map { [.dropAfter(bytes: $0)] } ?? [])
    }

    /// The digest the download must match before it gets its final name.
    func expectedChecksum() -> Checksum? {
        Checksum(algorithm: .sha256, hex: GeneratedContent.sha256(size: size, seed: seed))
    }
}

extension DemoFile {
    private static let mebibyte: Int64 = 1 << 20

    /// The files the demo serves and downloads: 36.5 MiB in all, about five seconds at four transfers
    /// at a time.
    static let catalog: [DemoFile] = [
        DemoFile(
            name: "mirror-slow.bin", size: 4 * mebibyte, seed: 1, bytesPerSecond: 1 << 20,
            note: "a slow server, 1 MiB/s"),
        DemoFile(name: "photos-2024.tar", size: 6 * mebibyte, seed: 2, bytesPerSecond: 3 << 20),
        DemoFile(name: "podcast-ep12.mp3", size: 3 * mebibyte, seed: 3, bytesPerSecond: 2 << 20),
        DemoFile(name: "dataset.csv.gz", size: 2 * mebibyte, seed: 4, bytesPerSecond: 2 << 20),
        DemoFile(
            name: "ubuntu-mini.iso", size: 8 * mebibyte, seed: 5, bytesPerSecond: 5 << 19, connections: 2,
            note: "2 connections, one range each"),
        DemoFile(
            name: "backup-flaky.zip", size: 5 * mebibyte, seed: 6, bytesPerSecond: 5 << 19, cutAfter: 2 * mebibyte,
            note: "connection dropped at 2 MiB, resumed with Range"),
        DemoFile(name: "slides.pdf", size: 3 * mebibyte / 2, seed: 7, bytesPerSecond: 3 << 19),
        DemoFile(name: "video-clip.mp4", size: 7 * mebibyte, seed: 8, bytesPerSecond: 7 << 19),
    ]
}
