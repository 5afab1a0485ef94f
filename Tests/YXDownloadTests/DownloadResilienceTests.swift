import Foundation
#if canImport(Glibc)
import Glibc
#endif
import XCTest
@_spi(YXQueueInternals) import YXQueue
import YXTestServer

@testable import YXDownload

final class DownloadResilienceTests: DownloadTestCase {
    func testDroppedConnectionResumesWithARangeRequest() async throws {
        let size: Int64 = 3 << 20
        server.serve(
            "/r.bin",
            Resource(.generated(size: size, seed: 5), etag: "v1", failures: [.dropAfter(bytes: 1 << 20)]))
        let result = try await run(makeJob("/r.bin")).get()
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: size, seed: 5))
        let requests = server.requests(to: "/r.bin")
        XCTAssertEqual(requests.count, 2)
        let range = try XCTUnwrap(requests.last?.header("Range"))
        XCTAssertTrue(range.hasPrefix("bytes="), range)
        XCTAssertNotEqual(range, "bytes=0-", "the retry resumes where the data stopped")
        XCTAssertEqual(requests.last?.header("If-Range"), "\"v1\"")
    }

    /// Without a validator, nothing proves that the rest of the file is of the version the `.part`
    /// holds: a retry after a broken connection asks for the whole file again, without `Range` (found by
    /// a review: it asked for the rest without `If-Range`, and glued a changed file's second half to the
    /// first version's first half, exit 0).
    func testARetryWithoutAValidatorStartsOver() async throws {
        let size: Int64 = 400_000
        var resource = Resource.versions([
            Resource.Version(.generated(size: size, seed: 8)), Resource.Version(.generated(size: size, seed: 9)),
        ])
        resource.failures = [.dropAfter(bytes: 200_000)]
        server.serve("/n.bin", resource)
        let result = try await run(makeJob("/n.bin")).get()
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: size, seed: 9), "the second version, whole")
        let requests = server.requests(to: "/n.bin")
        XCTAssertEqual(requests.count, 2)
        XCTAssertNil(requests.last?.header("Range"), "the retry asks for the whole file")
        XCTAssertEqual(result.resumedFrom, 0)
    }

    /// Segments need a validator: without one, nothing ties a part's bytes to the others' version of the
    /// file, so the download is one stream, whose retries start over (found by a review: a part's retry
    /// glued a changed file's bytes to the first version's, exit 0).
    func testSegmentsWithoutAValidatorAreOneStream() async throws {
        let size: Int64 = 3_000_000
        var resource = Resource.versions([
            Resource.Version(.generated(size: size, seed: 17)), Resource.Version(.generated(size: size, seed: 17)),
            Resource.Version(.generated(size: size, seed: 18)),
        ])
        resource.failures = [.dropAfter(bytes: 1_000_000), .dropAfter(bytes: 1_000_000)]  // the probe's one byte arrives whole
        server.serve("/x.bin", resource)
        let result = try await run(makeJob("/x.bin", options: fastOptions(connections: 4))).get()
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: size, seed: 18), "the last version, whole")
        let requests = server.requests(to: "/x.bin")
        XCTAssertEqual(requests.count, 3, "the probe, one stream, its retry from zero")
        XCTAssertEqual(requests.last?.header("Range"), nil)
    }

    /// Options holding a line break in a header or the user agent (a job stored by an older version, a
    /// program's own options) fail before any request: the break would add header lines of its own
    /// (found by a review: a stored CRLF header was sent).
    func testAHeaderWithALineBreakIsNeverSent() async throws {
        server.serve("/h.bin", Resource(.generated(size: 10, seed: 19), etag: "h"))
        for (header, agent) in [("X-A: 1\r\nX-Injected: 2", "yxdownload"), ("X-A: 1", "agent\r\nX-Injected: 2")] {
            var options = fastOptions()
            options.headers = [header]
            options.userAgent = agent
            let error = downloadError(await run(makeJob("/h.bin", options: options)))
            XCTAssertEqual(error?.kind, .transfer)
            XCTAssertTrue(error?.message.hasPrefix("a request header or the user agent holds a control character") == true)
        }
        XCTAssertEqual(server.requests(to: "/h.bin").count, 0)
    }

    /// Timeouts beyond what the engine counts (a year), infinite or not a number are no limit: the
    /// conversion to the engine's integers does not trap (found by a review: `--timeout 1e20` crashed).
    func testTimeoutsTooLongForTheEnginesClockDoNotTrap() async throws {
        server.serve("/t.bin", Resource(.generated(size: 100_000, seed: 12), etag: "t"))
        for (stall, connect) in [(1e20, 1e308), (Double.infinity, Double.infinity), (Double.nan, Double.nan)] {
            var options = fastOptions()
            options.stallTimeout = stall
            options.connectTimeout = connect
            let result = try await run(makeJob("/t.bin", file: "t-\(stall).bin", options: options)).get()
            XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: 100_000, seed: 12))
        }
    }

    /// A `NAME.part` with bytes that no download of ours wrote (no sidecar, no mark: a user's
    /// `report.part`, or a finished download of a file named so) is left alone and the download fails
    /// saying why; it was emptied and used (found by a review). One that a download of ours created and
    /// that was killed before its first state was written carries the ownership mark, and starts over.
    func testAPartThatIsNotOursIsLeftAlone() async throws {
        server.serve("/report", Resource(.generated(size: 5_000, seed: 13), etag: "r"))
        let part = directory.appendingPathComponent("report.part")
        let notes = Data("my precious notes\n".utf8)
        try notes.write(to: part)
        let error = downloadError(await run(makeJob("/report")))
        XCTAssertEqual(error?.kind, .fileSystem)
        XCTAssertTrue(error?.message.hasSuffix(DownloadError.foreignPartReason) == true, "\(String(describing: error))")
        XCTAssertEqual(try Data(contentsOf: part), notes, "the file was changed")
        XCTAssertEqual(server.requests(to: "/report").count, 0)
        XCTAssertEqual(files(), ["report.part"])

        // The same bytes with our ownership mark: a download of ours made it, and it starts over.
        let fd = open(part.path, O_RDWR)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertTrue(ResumeMark.write(ResumeMark.ownership, to: fd))
        close(fd)
        let result = try await run(makeJob("/report")).get()
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: 5_000, seed: 13))
        XCTAssertEqual(files(), ["report"])
        XCTAssertNil(ResumeMark.read(from: open(result.file.path, O_RDONLY)), "a final file carries no mark")
    }

    /// Two downloads write one `.part` (a worker that lost its lease while paused, and the worker that
    /// took the job over and resumed the file): the first to finish renames it, and the other finds its
    /// own file under the final name and is done too. It failed with "No such file or directory"
    /// (found by a review: the store then counted a whole file as failed for good).
    func testTwoDownloadsOfOnePartBothEndWithTheFile() async throws {
        let size: Int64 = 600_000
        server.serve("/shared.bin", Resource(.generated(size: size, seed: 15), etag: "s", bytesPerSecond: 200_000))
        let first = makeJob("/shared.bin")
        first.start(on: dispatcher)
        let part = directory.appendingPathComponent("shared.bin.part").path
        // Past the first second: the `.part` carries its resume mark, and the second download resumes it.
        try await waitUntil("the first download's resume state") {
            let fd = open(part, O_RDONLY)
            defer { if fd >= 0 { close(fd) } }
            return fd >= 0 && ResumeMark.read(from: fd).map { $0 != ResumeMark.ownership } == true
        }
        let second = try await run(makeJob("/shared.bin")).get()
        let firstResult = try await first.value as? DownloadResult
        XCTAssertEqual(second.sha256, GeneratedContent.sha256(size: size, seed: 15))
        XCTAssertEqual(firstResult?.sha256, GeneratedContent.sha256(size: size, seed: 15))
        XCTAssertGreaterThan(second.resumedFrom, 0, "the second download resumed the first one's .part")
        XCTAssertEqual(files(), ["shared.bin"])
    }

    /// A `.part` a download creates by name carries the ownership mark until its state replaces it.
    func testAPartCreatedByNameIsMarkedAsOurs() async throws {
        server.serve("/slow.bin", Resource(.generated(size: 400_000, seed: 14), etag: "s", bytesPerSecond: 200_000))
        let job = makeJob("/slow.bin")
        job.start(on: dispatcher)
        let part = directory.appendingPathComponent("slow.bin.part").path
        try await waitUntil("the .part to be named") { FileManager.default.fileExists(atPath: part) }
        let fd = open(part, O_RDONLY)
        defer { close(fd) }
        let mark = ResumeMark.read(from: fd)
        XCTAssertNotNil(mark, "the .part is marked")
        job.cancel()
        _ = try? await job.value
    }

    func testResumeAcrossJobsAndAChangedValidatorRestartsFromZero() async throws {
        let size: Int64 = 2 << 20
        // First run: the connection drops and no retry is allowed: the .part stays.
        server.serve("/c.bin", Resource(.generated(size: size, seed: 6), etag: "v1", failures: [.dropAfter(bytes: 700_000)]))
        let first = downloadError(await run(makeJob("/c.bin", options: fastOptions(retries: 0))))
        XCTAssertEqual(first?.kind, .partialBody)
        assertResumableOneStream("c.bin")
        XCTAssertFalse(files().contains("c.bin"))

        // Same entity: resumes with a range.
        server.resetCounters()
        server.serve("/c.bin", Resource(.generated(size: size, seed: 6), etag: "v1"))
        let resumed = try await run(makeJob("/c.bin")).get()
        XCTAssertEqual(resumed.sha256, GeneratedContent.sha256(size: size, seed: 6))
        XCTAssertGreaterThan(resumed.resumedFrom, 0)
        XCTAssertEqual(server.requests(to: "/c.bin").first?.header("Range").map { $0 != "bytes=0-" }, true)

        // A .part of an old version, and the server now has new content: the download starts over.
        try FileManager.default.removeItem(at: resumed.file)
        server.serve("/c.bin", Resource(.generated(size: size, seed: 6), etag: "v1", failures: [.dropAfter(bytes: 500_000)]))
        _ = downloadError(await run(makeJob("/c.bin", options: fastOptions(retries: 0))))
        server.serve("/c.bin", Resource(.generated(size: size + 5, seed: 7), etag: "v2"))
        let restarted = try await run(makeJob("/c.bin")).get()
        XCTAssertEqual(restarted.sha256, GeneratedContent.sha256(size: size + 5, seed: 7), "new content, from zero")
        XCTAssertEqual(restarted.resumedFrom, 0)
    }

    /// A server that honours `Range` but ignores `If-Range` answers a resume of an old version's `.part`
    /// with the rest of the new version: another validator, or another length. The download starts over
    /// within the same run (one retry) instead of gluing two versions together or failing.
    func testAResumeAnsweredWithAnotherVersionStartsOver() async throws {
        let size: Int64 = 2 << 20
        for (newSize, newSeed) in [(size, UInt64(21)), (size + 100_000, UInt64(22))] {
            server.resetCounters()
            server.serve("/g.bin", Resource(.generated(size: size, seed: 20), etag: "v1", failures: [.dropAfter(bytes: 600_000)]))
            _ = downloadError(await run(makeJob("/g.bin", options: fastOptions(retries: 0))))
            assertResumableOneStream("g.bin")
            var changed = Resource(.generated(size: newSize, seed: newSeed), etag: "v2")
            changed.ignoresIfRange = true
            server.serve("/g.bin", changed)
            let result = try await run(makeJob("/g.bin", options: fastOptions(retries: 1))).get()
            XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: newSize, seed: newSeed), "the new version, whole")
            XCTAssertEqual(result.resumedFrom, 0)
            let requests = server.requests(to: "/g.bin")
            XCTAssertEqual(requests.count, 3, "the drop, the resume refused, the whole file")
            XCTAssertEqual(requests.dropFirst().first?.header("If-Range"), "\"v1\"")
            XCTAssertNil(requests.last?.header("Range"), "from zero")
            try FileManager.default.removeItem(at: result.file)
        }
    }

    /// The same with parts (found by a helper's review): a server that ignores `If-Range` changes the
    /// file while a broken part is retried; the retry's part of the new version is refused, the file
    /// fails instead of being glued together, and the next run gets the new version whole.
    func testAPartAnsweredWithAnotherVersionFailsAndTheNextRunStartsOver() async throws {
        let size: Int64 = 4 << 20
        // Requests 0 to 4 (the probe, then the four parts) see the first version; the probe takes the
        // first failure (its one byte arrives whole), a part the second; its retry sees the second version.
        var changing = Resource.versions(
            Array(repeating: Resource.Version(.generated(size: size, seed: 30), etag: "v1"), count: 5)
                + [Resource.Version(.generated(size: size, seed: 31), etag: "v2")])
        changing.ignoresIfRange = true
        changing.failures = [.dropAfter(bytes: 300_000), .dropAfter(bytes: 300_000)]
        server.serve("/s.bin", changing)
        let refused = downloadError(await run(makeJob("/s.bin", options: fastOptions(connections: 4, retries: 1))))
        XCTAssertEqual(refused?.kind, .validatorChanged)
        XCTAssertFalse(files().contains("s.bin"), "no file glued from two versions")
        let result = try await run(makeJob("/s.bin", options: fastOptions(connections: 4, retries: 0))).get()
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: size, seed: 31))
        XCTAssertEqual(result.resumedFrom, 0)
    }

    func testATornFirstSidecarMakesTheDownloadStartOver() async throws {
        // The first sidecar is created in place, not renamed: a process killed while it wrote one
        // leaves a file that does not decode, beside a .part whose bytes then count for nothing.
        let size: Int64 = 2 << 20
        server.serve("/t.bin", Resource(.generated(size: size, seed: 12), etag: "v1"))
        try Data(repeating: 0xAB, count: 900_000).write(to: directory.appendingPathComponent("t.bin.part"))
        try Data(#"{"url":"http://127.0.0.1/t.bin","et"#.utf8).write(to: directory.appendingPathComponent("t.bin.part.meta"))
        let result = try await run(makeJob("/t.bin")).get()
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: size, seed: 12))
        XCTAssertEqual(result.resumedFrom, 0)
        XCTAssertEqual(server.requests(to: "/t.bin").first?.header("Range"), nil, "from zero")
        XCTAssertEqual(files().sorted(), ["t.bin"], "the torn sidecar is gone with the .part")
    }

    func testTheFirstSidecarIsCreatedInPlaceAndLaterOnesReplaceIt() throws {
        let path = directory.appendingPathComponent("s.part.meta").path
        var state = ResumeState(url: "http://127.0.0.1/s", etag: "\"v1\"", total: 10, segments: [.init(start: 0, end: 9, done: 0)])
        XCTAssertTrue(state.create(atPath: path))
        XCTAssertFalse(state.create(atPath: path), "create never replaces a sidecar")
        state.segments[0].done = 5
        XCTAssertTrue(state.save(toPath: path))
        XCTAssertEqual(ResumeState.load(from: URL(fileURLWithPath: path))?.segments.first?.done, 5)
        XCTAssertEqual(files().sorted(), ["s.part.meta"], "no temporary file left")
    }

    func testAServerThatIgnoresRangesGetsADownloadFromZero() async throws {
        let size: Int64 = 1 << 20
        server.serve("/i.bin", Resource(.generated(size: size, seed: 8), etag: "v1", failures: [.dropAfter(bytes: 300_000)]))
        _ = downloadError(await run(makeJob("/i.bin", options: fastOptions(retries: 0))))
        server.serve("/i.bin", Resource(.generated(size: size, seed: 8), etag: "v1", ignoresRange: true))
        let result = try await run(makeJob("/i.bin")).get()
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: size, seed: 8))
        XCTAssertEqual(result.resumedFrom, 0)
        // Segmented, against a server that ignores ranges: one stream.
        let segmented = try await run(makeJob("/i.bin", file: "i2.bin", options: fastOptions(connections: 8))).get()
        XCTAssertEqual(segmented.sha256, GeneratedContent.sha256(size: size, seed: 8))
    }

    /// Found by a user test: a server that answered the probe's one-byte range (`206`) but the parts'
    /// ranges with the whole file (`200`, the same `ETag`) failed the file as "changed on the server",
    /// after every retry and in every run. Each part now reads that body up to its own range.
    func testPartsAnsweredWithTheWholeFileStillEndWithTheFile() async throws {
        let size: Int64 = 3_000_000
        // The probe gets its range (the first, harmless failure), every part the whole file.
        server.serve(
            "/w.bin",
            Resource(
                .generated(size: size, seed: 40), etag: "w1",
                failures: [.stall(afterBytes: 0, seconds: 0)] + Array(repeating: .ignoredRange, count: 4)))
        let result = try await run(makeJob("/w.bin", options: fastOptions(connections: 4, retries: 0))).get()
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: size, seed: 40))
        XCTAssertEqual(files(), ["w.bin"])
        XCTAssertEqual(server.requests(to: "/w.bin").count, 5, "one request a part, no retry")
        // Some parts get their range and others the whole file (a server behind a mixed pool).
        server.serve(
            "/m.bin",
            Resource(
                .generated(size: size, seed: 41), etag: "m1",
                failures: [.stall(afterBytes: 0, seconds: 0), .ignoredRange, .stall(afterBytes: 0, seconds: 0), .ignoredRange]))
        let mixed = try await run(makeJob("/m.bin", options: fastOptions(connections: 4, retries: 0))).get()
        XCTAssertEqual(mixed.sha256, GeneratedContent.sha256(size: size, seed: 41))
        // The whole file of another version is still refused: its bytes would be glued to the first's.
        server.serve(
            "/v.bin",
            Resource.versions([
                Resource.Version(.generated(size: size, seed: 42), etag: "v1"),
                Resource.Version(.generated(size: size, seed: 43), etag: "v2"),
            ]))
        let changed = downloadError(await run(makeJob("/v.bin", options: fastOptions(connections: 4, retries: 0))))
        XCTAssertEqual(changed?.kind, .validatorChanged, "\(String(describing: changed))")
        XCTAssertFalse(files().contains("v.bin"))
    }

    /// A part given the whole file passes over what comes before its range, writes its range where it
    /// belongs, and ends the transfer at the range's last byte, whatever the sizes of the pieces that arrive
    /// (one byte, pieces that straddle the range's first or last byte, the whole body at once).
    func testAPartGivenTheWholeFileKeepsOnlyItsRangeAndStopsAtItsEnd() throws {
        let content = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        for piece in [1, 7, 100, 333, 1000] {
            let session = makeSession("w\(piece).bin")
            _ = try session.prepare()
            session.state.withLock { s in
                s.resume.total = 1000
                s.resume.segments = [
                    .init(start: 0, end: 299, done: 0), .init(start: 300, end: 699, done: 0), .init(start: 700, end: 999, done: 0),
                ]
                s.passingOver[1] = 300
            }
            var offset = 0
            var stopped = false
            while offset < content.count, !stopped {
                let bytes = content[offset..<min(offset + piece, content.count)]
                stopped = bytes.withUnsafeBytes { session.write($0, segment: 1) } != nil
                offset += bytes.count
            }
            XCTAssertTrue(stopped, "\(piece)")
            XCTAssertTrue(offset >= 700 && offset < 700 + piece, "\(piece): stopped after byte \(offset) of the body")
            XCTAssertTrue(session.isSegmentComplete(1), "\(piece)")
            let written = try Data(contentsOf: directory.appendingPathComponent("w\(piece).bin.part"))
            XCTAssertEqual(written.count, 700, "\(piece): nothing past the range")
            XCTAssertEqual(Array(written[300..<700]), Array(content[300..<700]), "\(piece)")
            XCTAssertEqual(Array(written[0..<300]), [UInt8](repeating: 0, count: 300), "\(piece): nothing before it")
            session.end()
        }
    }

    func testCompletePartIsFinalizedWithoutDownloadingAgain() async throws {
        let size: Int64 = 200_000
        server.serve("/done.bin", Resource(.generated(size: size, seed: 10), etag: "v1"))
        let job = makeJob("/done.bin")
        _ = try await run(job).get()
        // Simulate a crash between the last byte and the rename.
        let final = directory.appendingPathComponent("done.bin")
        try FileManager.default.moveItem(at: final, to: directory.appendingPathComponent("done.bin.part"))
        var state = ResumeState(url: server.url("/done.bin").absoluteString, etag: "\"v1\"", total: size, segments: [
            .init(start: 0, end: size - 1, done: size)
        ])
        try state.save(to: directory.appendingPathComponent("done.bin.part.meta"))
        server.resetCounters()
        let again = try await run(makeJob("/done.bin")).get()
        XCTAssertEqual(again.outcome, .finalizedPart)
        XCTAssertEqual(server.requests(to: "/done.bin").count, 0)
        XCTAssertEqual(again.sha256, GeneratedContent.sha256(size: size, seed: 10))

        // Without a sidecar saying it is complete: a 416 on the resume request finalizes it too.
        try FileManager.default.moveItem(at: final, to: directory.appendingPathComponent("done.bin.part"))
        state.segments[0].done = size - 1  // the sidecar lagged behind the file
        try state.save(to: directory.appendingPathComponent("done.bin.part.meta"))
        let viaRange = try await run(makeJob("/done.bin")).get()
        XCTAssertEqual(viaRange.sha256, GeneratedContent.sha256(size: size, seed: 10))
    }

    func testShortBodyAndNotFoundNeverLeaveAFinalFile() async throws {
        server.serve("/short.bin", Resource(.generated(size: 100_000, seed: 11), failures: Array(repeating: .shortBody(missing: 10), count: 10)))
        let short = downloadError(await run(makeJob("/short.bin", options: fastOptions(retries: 1))))
        XCTAssertEqual(short?.kind, .partialBody)
        XCTAssertTrue(short?.isTransient ?? false)
        XCTAssertFalse(files().contains("short.bin"))

        server.serve("/missing.bin", .status(404))
        let missing = downloadError(await run(makeJob("/missing.bin")))
        XCTAssertEqual(missing?.httpStatus, 404)
        XCTAssertEqual(missing?.isTransient, false)
        XCTAssertEqual(server.requests(to: "/missing.bin").count, 1, "a 404 makes exactly one request")
        XCTAssertFalse(files().contains { $0.hasPrefix("missing.bin") }, "no file, and no empty .part: \(files())")
        for status in [403, 410] {
            server.serve("/s\(status)", .status(status))
            let result = await run(makeJob("/s\(status)"))
            XCTAssertEqual(downloadError(result)?.httpStatus, status)
            XCTAssertEqual(server.requests(to: "/s\(status)").count, 1)
        }
    }

    func testTransientStatusesAreRetriedThenSucceed() async throws {
        server.serve(
            "/flaky.bin",
            Resource(.generated(size: 50_000, seed: 12), failures: [.status(503), .status(500), .status(503)]))
        let result = try await run(makeJob("/flaky.bin")).get()
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: 50_000, seed: 12))
        XCTAssertEqual(server.requests(to: "/flaky.bin").count, 4)

        server.serve("/down.bin", .status(503))
        let error = downloadError(await run(makeJob("/down.bin", options: fastOptions(retries: 2))))
        XCTAssertEqual(error?.httpStatus, 503)
        XCTAssertEqual(server.requests(to: "/down.bin").count, 3, "retries + 1 attempts")
    }

    func testRetryAfterIsRespectedInBothForms() async throws {
        server.serve(
            "/wait.bin", Resource(.generated(size: 1000, seed: 13), failures: [.status(429, retryAfter: .seconds(1))]))
        _ = try await run(makeJob("/wait.bin")).get()
        // The server's clock: the retry came no sooner than the second asked for.
        let tries = server.requests(to: "/wait.bin").map(\.receivedAt)
        XCTAssertEqual(tries.count, 2)
        XCTAssertGreaterThanOrEqual(tries[1], tries[0] + 1_000_000_000, "Retry-After: 1 was not honoured")

        let served = DispatchTime.now().uptimeNanoseconds
        server.serve(
            "/wait2.bin",
            Resource(.generated(size: 1000, seed: 13), failures: [.status(503, retryAfter: .date(Date().addingTimeInterval(2)))]))
        _ = try await run(makeJob("/wait2.bin")).get()
        // HTTP dates have whole seconds: the date named is at least one second after the route was served.
        let retried = try XCTUnwrap(server.requests(to: "/wait2.bin").last?.receivedAt)
        XCTAssertGreaterThanOrEqual(retried, served + 950_000_000)
    }

    func testNoRequestGoesToAHostBeforeItsRetryAfter() async throws {
        server.serve("/a.bin", Resource(.generated(size: 1000, seed: 14), failures: [.status(503, retryAfter: .seconds(1))]))
        server.serve("/b.bin", Resource(.generated(size: 1000, seed: 15)))
        let first = makeJob("/a.bin")
        dispatcher.add(first)
        // Once the client read the 503 (the host is held), start another download to the same host. (Once the
        // server sent it is not enough: the lane may not have read it yet when the other request leaves.)
        // A test thread that looks only after the second has passed finds the retry sent instead.
        let other = server.url("/b.bin")
        try await waitUntil("the 503 read") {
            engine.hostGate.wait(for: other) > 0 || server.requests(to: "/a.bin").count >= 2
        }
        _ = try await run(makeJob("/b.bin")).get()
        _ = try await run(first).get()
        // The server's clock: the other download's request came no sooner than the second named
        // (the gate opens a second after the 503 reached the client, which is after the server read /a.bin).
        let throttled = try XCTUnwrap(server.requests(to: "/a.bin").first?.receivedAt)
        let otherSent = try XCTUnwrap(server.requests(to: "/b.bin").first?.receivedAt)
        XCTAssertGreaterThanOrEqual(otherSent, throttled + 1_000_000_000, "the other download waited for the host")
        let retried = try XCTUnwrap(server.requests(to: "/a.bin").last?.receivedAt)
        XCTAssertGreaterThanOrEqual(retried, throttled + 1_000_000_000)
    }

    func testRedirectsAreFollowedButOnlyToHTTP() async throws {
        server.serve("/target.bin", Resource(.generated(size: 5000, seed: 16)))
        server.serve("/hop1", .redirect(to: "/hop2"))
        server.serve("/hop2", .redirect(to: "/target.bin", status: 301))
        let followed = try await run(makeJob("/hop1", file: "via-redirect.bin")).get()
        XCTAssertEqual(followed.sha256, GeneratedContent.sha256(size: 5000, seed: 16))
        XCTAssertEqual(followed.file.lastPathComponent, "via-redirect.bin")

        server.serve("/to-file", .redirect(to: "file:///etc/passwd"))
        let refused = downloadError(await run(makeJob("/to-file")))
        XCTAssertEqual(refused?.kind, .unsupportedScheme)

        server.serve("/loop1", .redirect(to: "/loop2"))
        server.serve("/loop2", .redirect(to: "/loop1"))
        let loop = downloadError(await run(makeJob("/loop1")))
        XCTAssertEqual(loop?.kind, .tooManyRedirects)
        // Nothing was written anywhere but the destination directory, and no final file for failures.
        XCTAssertEqual(files().filter { !$0.hasSuffix(".part") && !$0.hasSuffix(".meta") }, ["via-redirect.bin"])
    }

    func testOnlyHTTPAndHTTPSURLs() async throws {
        let job = DownloadJob(
            url: URL(string: "ftp://127.0.0.1/x")!, to: directory.appendingPathComponent("x"), checksum: nil,
            options: fastOptions(), engine: engine)
        let error = downloadError(await run(job))
        XCTAssertEqual(error?.kind, .unsupportedScheme)
    }

    func testStallTimesOutAndIsRetried() async throws {
        server.serve("/stall.bin", Resource(.generated(size: 200_000, seed: 17), etag: "s", failures: [.stall(afterBytes: 50_000, seconds: 5)]))
        var options = fastOptions()
        options.stallTimeout = 1
        let result = try await run(makeJob("/stall.bin", options: options)).get()
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: 200_000, seed: 17))
        XCTAssertEqual(server.requests(to: "/stall.bin").count, 2)
    }

    func testCancelDuringASlowTransferIsPromptKeepsThePartAndResumes() async throws {
        let size: Int64 = 2 << 20
        server.serve("/slow.bin", Resource(.generated(size: size, seed: 18), etag: "slow", bytesPerSecond: 256 * 1024))
        let job = makeJob("/slow.bin")
        let canceled = Locked<UInt64?>(nil)
        let token = job.onCancel { _ in canceled.withLock { $0 = DispatchTime.now().uptimeNanoseconds } }
        dispatcher.add(job)
        try await waitUntil("300 KB on disk") { job.progressSnapshot.bytes >= 300_000 }
        let cancelAt = DispatchTime.now().uptimeNanoseconds
        job.cancel()
        // Prompt without a clock: the job is canceled before `cancel()` returns.
        XCTAssertEqual(job.state, .canceled)
        await dispatcher.waitForAllJobs()
        let callbackAt = try XCTUnwrap(canceled.withLock { $0 })
        // The callback comes through a callback queue, so its time is the scheduler's; this bound only
        // tells a cancel that waited for the transfer (about 7 s left at 256 KiB/s) from one that did not.
        XCTAssertLessThan(callbackAt - cancelAt, 5_000_000_000, "the cancel did not wait for the transfer")
        // The transfer really stopped: its step let go of the .part (closed), so nothing more is written.
        let session = try XCTUnwrap((job.manager as? DownloadJobManager)?.session)
        try await waitUntil("the .part closed") { session.isClosed }
        XCTAssertFalse(files().contains("slow.bin"))
        XCTAssertTrue(files().contains("slow.bin.part"))

        server.serve("/slow.bin", Resource(.generated(size: size, seed: 18), etag: "slow"))
        let resumed = try await run(makeJob("/slow.bin")).get()
        XCTAssertEqual(resumed.sha256, GeneratedContent.sha256(size: size, seed: 18))
        XCTAssertGreaterThan(resumed.resumedFrom, 200_000)
        _ = token
    }

    func testSegmentedPartRetriesOnItsOwn() async throws {
        let size: Int64 = 4 << 20
        // Request 1 is the probe (a stall of 0 s is a normal answer); request 2, the first part to ask,
        // loses its connection after 100 KB; every other request is served normally.
        server.serve(
            "/seg.bin",
            Resource(
                .generated(size: size, seed: 19), etag: "g",
                failures: [.stall(afterBytes: 0, seconds: 0), .dropAfter(bytes: 100_000)]))
        let result = try await run(makeJob("/seg.bin", options: fastOptions(connections: 4))).get()
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: size, seed: 19))
        let requests = server.requests(to: "/seg.bin")
        XCTAssertEqual(requests.count, 6, "probe, 4 parts, 1 retry of the part that failed")
        let ranges = requests.compactMap { $0.header("Range") }
        XCTAssertEqual(Set(ranges).count, 6, "the retry asked only for the rest of its segment: \(ranges)")
    }

    /// Every part of a segmented download loses its connection at once, so every part asks for its
    /// successor at about the same moment, on as many threads. Each successor joins the graph before
    /// the finalize step waits for it: a finalize step that waits for an operation not yet in the job
    /// made the whole download fail ("invalid operation graph") when another part's change was
    /// examined in between (seen in CI under load, after a `kill -9` and a resume with 4 connections).
    func testPartsThatAllRetryAtOnceKeepTheGraphWhole() async throws {
        let size: Int64 = 2 << 20
        let segments = 16
        var options = fastOptions(connections: segments)
        // The disconnects go to the first requests to arrive, not one to each part: when one lane's
        // thread starts late, the other lane's parts can take several each. As many retries as there
        // are disconnects, so that no part runs out whatever the order.
        options.retryPolicy = RetryPolicy(retries: segments, initialDelay: 0.001, maxDelay: 0.001, jitter: 0)
        options.computeSHA256 = false
        for round in 0..<12 {
            // Request 1 is the probe (a stall of 0 s is a normal answer); each part's first request
            // is closed before a byte of its answer.
            server.serve(
                "/all\(round).bin",
                Resource(
                    .generated(size: size, seed: 40), etag: "a",
                    failures: [.stall(afterBytes: 0, seconds: 0)] + Array(repeating: .disconnect, count: segments)))
            let result = await run(makeJob("/all\(round).bin", options: options))
            XCTAssertEqual(try result.get().bytes, size, "round \(round)")
            XCTAssertEqual(
                try sha256(of: directory.appendingPathComponent("all\(round).bin")),
                GeneratedContent.sha256(size: size, seed: 40), "round \(round)")
        }
    }

    func testManySmallFilesReuseConnections() async throws {
        for index in 0..<1_000 {
            server.serve("/small/\(index)", Resource(.generated(size: 2_000, seed: UInt64(index))))
        }
        var options = fastOptions()
        options.computeSHA256 = false
        limitTransfers(8)
        let jobs = (0..<1_000).map { makeJob("/small/\($0)", file: "s\($0)", options: options) }
        for job in jobs { dispatcher.add(job) }
        await dispatcher.waitForAllJobs()
        XCTAssertTrue(jobs.allSatisfy { $0.state == .finished })
        XCTAssertEqual(server.requestCount, 1_000)
        XCTAssertLessThanOrEqual(server.connectionCount, 20, "connections are reused across files")
        XCTAssertEqual(try sha256(of: directory.appendingPathComponent("s999")), GeneratedContent.sha256(size: 2_000, seed: 999))
    }
}
