import XCTest
import YXDownload

@testable import YXDownloadCLI

/// The advice at the end of a failure's line fits where the download ran: a plain run is resumed by
/// running the same command again; a worker's job that failed for good by enqueueing it again; a job
/// that goes back to its store needs nothing (the store tries again). The messages themselves are
/// checked against the real binary in ``FailureMessageTests``.
final class FailureAdviceTests: XCTestCase {
    private let url = "http://127.0.0.1:8080/a.bin"

    private func text(_ error: DownloadError, _ context: FailureMessage.Context, retries: Int = 0) -> String {
        FailureMessage.text(for: error, file: "out/a.bin", retries: retries, context: context)
    }

    func testABrokenConnection() {
        let error = DownloadError(.connectionLost, "Recv failure: Connection reset by peer", url: url)
        XCTAssertEqual(
            text(error, .run, retries: 2),
            "the connection broke (Recv failure: Connection reset by peer) after 3 attempts: run the same command again to resume")
        XCTAssertEqual(
            text(error, .queue, retries: 2),
            "the connection broke (Recv failure: Connection reset by peer) after 3 attempts: enqueue it again to resume")
        XCTAssertEqual(
            text(error, .requeued, retries: 2),
            "the connection broke (Recv failure: Connection reset by peer) after 3 attempts")
    }

    func testAServerThatStoppedSending() {
        let error = DownloadError(.timedOut, "no data for 30 s", url: url)
        XCTAssertEqual(
            text(error, .run),
            "no data for 30 s: the server stopped sending; run the same command again to resume, or give --timeout more seconds")
        XCTAssertEqual(
            text(error, .queue),
            "no data for 30 s: the server stopped sending; enqueue it again to resume, or give --timeout more seconds")
        XCTAssertEqual(text(error, .requeued), "no data for 30 s: the server stopped sending")
    }

    func testAServerError() {
        let error = DownloadError(.httpStatus, "HTTP 503", url: url, httpStatus: 503)
        XCTAssertEqual(
            text(error, .run),
            "HTTP 503 Service Unavailable: the server failed; try again later (the same command resumes what arrived)")
        XCTAssertEqual(text(error, .queue), "HTTP 503 Service Unavailable: the server failed; enqueue it again later")
        XCTAssertEqual(text(error, .requeued), "HTTP 503 Service Unavailable: the server failed")
        let limited = DownloadError(.httpStatus, "HTTP 429", url: url, httpStatus: 429)
        XCTAssertEqual(
            text(limited, .queue),
            "HTTP 429 Too Many Requests: the server limits requests; enqueue it again later, or give the host a lower "
                + "enqueue --per-host")
        XCTAssertEqual(text(limited, .requeued), "HTTP 429 Too Many Requests: the server limits requests")
    }

    /// A success status without the file is not "refused" (found by a review).
    func testASuccessWithoutAFile() {
        let error = DownloadError(.httpStatus, "HTTP 204", url: url, httpStatus: 204)
        XCTAssertEqual(text(error, .run), "HTTP 204 No Content: the server answered without sending a file; check the URL")
    }

    func testAFileThatChangedOrDisagreesWithItsLength() {
        let changed = DownloadError(.validatorChanged, "the file changed on the server", url: url)
        XCTAssertEqual(text(changed, .queue), "the file changed on the server: enqueue it again to download it from the start")
        XCTAssertEqual(text(changed, .requeued), "the file changed on the server")
        let length = DownloadError(.lengthMismatch, "the file has 10 bytes, the server announced 12", url: url)
        XCTAssertEqual(
            text(length, .run), "the file has 10 bytes, the server announced 12: run the same command again to download it anew")
        XCTAssertEqual(
            text(length, .queue), "the file has 10 bytes, the server announced 12: enqueue it again to download it anew")
    }

    /// A worker stops on its own disk's faults, and its stop line says what to do: the download's line
    /// does not tell it to run a command again.
    func testAFullDisk() {
        let error = DownloadError(.fileSystem, "cannot write /srv/out/a.bin.part: No space left on device", url: url, osErrno: ENOSPC)
        XCTAssertEqual(
            text(error, .run),
            "No space left on device (writing out/a.bin.part): free some space, then run the same command again to resume")
        XCTAssertEqual(text(error, .requeued), "No space left on device (writing out/a.bin.part): free some space")
    }

    func testAPartReplacedDuringTheDownload() {
        let error = DownloadError(
            .fileSystem, "cannot rename /srv/out/a.bin.part: " + DownloadError.replacedPartReason, url: url)
        let head = "out/a.bin.part was replaced by another file during the download, so it was not renamed to out/a.bin"
        XCTAssertEqual(text(error, .run), head + "; move that file away, then run the same command again to download it from the start")
        XCTAssertEqual(text(error, .queue), head + "; move that file away, then enqueue it again to download it from the start")
        XCTAssertEqual(text(error, .requeued), head)
    }
}
