import Foundation
import XCTest

@testable import YXDownload

/// A final file given by its path (as `yxdownload` gives it) reads the same as one given by URL: the
/// URL made when asked for, a result equal to one made with the URL.
final class FileLocationTests: XCTestCase {
    func testAPathGivesTheURLThatFileURLWithPathMakes() {
        for path in ["/tmp/dl/a.bin", "dl/sub dir/é.bin", "/tmp/dl/100%.bin"] {
            let byPath = FileLocation(path: path)
            XCTAssertEqual(byPath.url, URL(fileURLWithPath: path, isDirectory: false), path)
            XCTAssertEqual(byPath.path, path)
            let byURL = FileLocation(url: URL(fileURLWithPath: path, isDirectory: false))
            XCTAssertEqual(byURL.url, byPath.url, path)
        }
    }

    func testAResultOfAPathEqualsTheResultOfItsURL() {
        let path = "/tmp/dl/a.bin"
        let lazy = DownloadResult(
            outcome: .downloaded, url: "http://h/a.bin", location: FileLocation(path: path), bytes: 10,
            bytesReceived: 10, resumedFrom: 0, sha256: nil)
        var given = DownloadResult(
            outcome: .downloaded, url: "http://h/a.bin", file: URL(fileURLWithPath: path), bytes: 10, bytesReceived: 10,
            resumedFrom: 0, sha256: nil)
        XCTAssertEqual(lazy, given)
        XCTAssertEqual(lazy.file.path, path)
        given.file = URL(fileURLWithPath: "/tmp/dl/b.bin")
        XCTAssertNotEqual(lazy, given)
        XCTAssertEqual(given.file.lastPathComponent, "b.bin")
        given.bytes = 11
        given.file = lazy.file
        XCTAssertNotEqual(lazy, given, "another field differs")
    }

    func testAJobGivenAPathReportsItAsItsDestination() {
        let job = DownloadJob(
            url: URL(string: "http://127.0.0.1:9/a.bin")!, toPath: "/tmp/dl/a.bin", checksum: nil,
            options: DownloadOptions(), engine: .shared, callbackQueue: .global(), destinationIsFresh: true)
        XCTAssertEqual(job.destination, URL(fileURLWithPath: "/tmp/dl/a.bin"))
        XCTAssertEqual(job.location.path, "/tmp/dl/a.bin")
    }
}
