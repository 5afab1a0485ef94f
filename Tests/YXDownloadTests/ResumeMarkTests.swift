import Foundation
import XCTest
import YXQueue
import YXTestServer

@testable import YXDownload

#if canImport(Glibc)
import Glibc
#endif

/// The resume mark: one stream keeps what it needs to resume on its `.part` (an extended attribute),
/// not in a sidecar file; several segments keep a sidecar.
final class ResumeMarkTests: DownloadTestCase {
    func testTheMarkRoundTripsAndRefusesWhatIsNotOurs() {
        let url = "http://127.0.0.1:8080/a.bin"
        let tagged = ResumeState(url: url, etag: "\"5f-400000\"", total: 4 << 20, segments: [.init(start: 0, end: (4 << 20) - 1, done: 7)])
        let taggedMark = try? XCTUnwrap(ResumeMark.value(of: tagged))
        XCTAssertEqual(taggedMark, "1 \(ResumeMark.hash(url)) 4194304 \"5f-400000\"")
        XCTAssertLessThanOrEqual(taggedMark?.utf8.count ?? 99, 68, "fits inside an ext4 inode")
        let back = taggedMark.flatMap { ResumeMark.state(from: $0, url: url) }
        XCTAssertEqual(back?.validator, tagged.validator)
        XCTAssertEqual(back?.total, tagged.total)
        XCTAssertEqual(back?.segments, [.init(start: 0, end: (4 << 20) - 1, done: 0)], "the .part's size says what is done")

        let dated = ResumeState(url: url, etag: "W/\"weak\"", lastModified: "Tue, 24 Nov 2026 14:00:00 GMT", segments: [.init(start: 0, end: nil, done: 0)])
        let datedMark = ResumeMark.value(of: dated)
        XCTAssertEqual(datedMark, "1 \(ResumeMark.hash(url)) - Tue, 24 Nov 2026 14:00:00 GMT", "a weak tag is no validator")
        let datedBack = datedMark.flatMap { ResumeMark.state(from: $0, url: url) }
        XCTAssertEqual(datedBack?.validator, "Tue, 24 Nov 2026 14:00:00 GMT")
        XCTAssertNil(datedBack?.total)

        XCTAssertNil(taggedMark.flatMap { ResumeMark.state(from: $0, url: url + "?v=2") }, "made for another URL")
        XCTAssertNil(ResumeMark.value(of: ResumeState(url: url, total: 10, segments: [.init(start: 0, end: 9, done: 0)])), "no validator")
        let parts = ResumeState(url: url, etag: "\"x\"", total: 10, segments: [.init(start: 0, end: 4, done: 0), .init(start: 5, end: 9, done: 0)])
        XCTAssertNil(ResumeMark.value(of: parts), "several segments keep a sidecar")

        // Whatever else an attribute holds is not taken for a mark, and never crashes the reader.
        let hash = ResumeMark.hash(url)
        for text in ["", "1", "1 \(hash)", "1 \(hash) 10", "1 \(hash) 10 ", "2 \(hash) 10 \"x\"", "1 \(hash) -5 \"x\"",
            "1 \(hash) ten \"x\"", "1  10 \"x\"", "1 \(hash)  \"x\""]
        {
            XCTAssertNil(ResumeMark.state(from: text, url: url), text)
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...40, using: &generator)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if Bool.random(using: &generator) { bytes = Array("1 \(hash) ".utf8) + bytes }
            let text = String(decoding: bytes, as: UTF8.self)
            if let state = ResumeMark.state(from: text, url: url) {
                XCTAssertEqual(state.url, url)
                XCTAssertNotNil(state.validator, text)
            }
        }
    }

    func testALargeOneStreamDownloadKeepsItsStateOnThePartAndTheFinalFileHasNoMark() async throws {
        try XCTSkipUnless(folderKeepsMarks, "the temporary folder's file system keeps no extended attributes")
        let size: Int64 = 3 << 20
        var resource = Resource(.generated(size: size, seed: 41), etag: "m1")
        resource.bytesPerSecond = 2 << 20
        server.serve("/m.bin", resource)
        let job = makeJob("/m.bin")
        let dispatcher = try XCTUnwrap(self.dispatcher)
        let running = Task { try await job.run(on: dispatcher) as? DownloadResult }
        let part = directory.appendingPathComponent("m.bin.part")
        try await waitUntil("bytes in the .part") {
            ((try? FileManager.default.attributesOfItem(atPath: part.path)[.size] as? Int) ?? 0) > 0
        }
        // Set before the first byte, and no sidecar beside it.
        XCTAssertEqual(resumeMark(of: "m.bin.part"), "1 \(ResumeMark.hash(server.url("/m.bin").absoluteString)) \(size) \"m1\"")
        XCTAssertFalse(files().contains("m.bin.part.meta"), "\(files())")
        let value = try await running.value
        let result = try XCTUnwrap(value)
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: size, seed: 41))
        XCTAssertEqual(files(), ["m.bin"])
        XCTAssertNil(resumeMark(of: "m.bin"), "the mark is removed before the rename")
    }

    func testAMarkMadeForAnotherURLIsIgnoredAndSegmentsKeepASidecarInstead() async throws {
        try XCTSkipUnless(folderKeepsMarks, "the temporary folder's file system keeps no extended attributes")
        let size: Int64 = 2 << 20
        // A .part from another URL's download, marked as that download left it.
        let part = directory.appendingPathComponent("s.bin.part")
        try Data(repeating: 0xAB, count: 500_000).write(to: part)
        let other = ResumeState(url: "http://elsewhere.example/s.bin", etag: "\"s1\"", total: size, segments: [.init(start: 0, end: size - 1, done: 0)])
        let fd = open(part.path, O_RDWR | O_CLOEXEC)
        XCTAssertTrue(ResumeMark.write(try XCTUnwrap(ResumeMark.value(of: other)), to: fd))
        close(fd)

        var resource = Resource(.generated(size: size, seed: 42), etag: "s1")
        resource.bytesPerSecond = 1 << 20
        server.serve("/s.bin", resource)
        let job = makeJob("/s.bin", options: fastOptions(connections: 4))
        let dispatcher = try XCTUnwrap(self.dispatcher)
        let running = Task { try await job.run(on: dispatcher) as? DownloadResult }
        try await waitUntil("the sidecar of the segments") { files().contains("s.bin.part.meta") }
        XCTAssertNil(resumeMark(of: "s.bin.part"), "the sidecar took over from the mark")
        let value = try await running.value
        let result = try XCTUnwrap(value)
        XCTAssertEqual(result.resumedFrom, 0, "another URL's bytes count for nothing")
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: size, seed: 42))
        XCTAssertEqual(files(), ["s.bin"])
        XCTAssertNil(resumeMark(of: "s.bin"))
    }
}

/// The sidecar's atomic rewrite goes through `NAME.part.meta.tmp`: a symbolic link in that place (put
/// there by someone who can write in the folder) is replaced, never written through.
final class SidecarLinkTests: XCTestCase {
    func testTheTemporaryFileOfARewriteIsNeverALinkFollowed() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sidecar-link-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("out"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let victim = folder.appendingPathComponent("victim")
        try Data("keep me".utf8).write(to: victim)
        let sidecar = folder.appendingPathComponent("out/f.bin.part.meta").path
        try FileManager.default.createSymbolicLink(atPath: sidecar + ".tmp", withDestinationPath: victim.path)

        let state = ResumeState(url: "http://127.0.0.1/f.bin", etag: "\"v1\"", total: 10, segments: [.init(start: 0, end: 9, done: 4)])
        XCTAssertTrue(state.save(toPath: sidecar))
        XCTAssertEqual(try Data(contentsOf: victim), Data("keep me".utf8), "written through the link")
        XCTAssertEqual(ResumeState.load(from: URL(fileURLWithPath: sidecar))?.segments.first?.done, 4)
        XCTAssertFalse(FileManager.default.fileExists(atPath: sidecar + ".tmp"))

        // A FIFO in that place is not waited on (the session's lock is held meanwhile): the write fails.
        XCTAssertEqual(mkfifo(sidecar + ".tmp", 0o644), 0)
        XCTAssertFalse(state.save(toPath: sidecar))
        XCTAssertEqual(ResumeState.load(from: URL(fileURLWithPath: sidecar))?.segments.first?.done, 4, "the old state stays")
    }
}
