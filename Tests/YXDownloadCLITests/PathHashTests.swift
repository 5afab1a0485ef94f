import XCTest

@testable import YXDownloadCLI

/// `PathHash`: a path given in pieces hashes as the joined path does, with or without its partial files'
/// suffixes, for ASCII names (hashed from their bytes) and others (hashed as strings).
final class PathHashTests: XCTestCase {
    func testANameAndItsPartialFilesHashAsTheirJoinedPaths() {
        let names = ["a", "name.bin", "q;", "caf\u{E9}", "cafe\u{301}", "q\u{37E}", "日本.txt", "x.part", String(repeating: "n", count: 200)]
        for prefix in ["", "/", "d/", "d/\u{E9}/"] {
            for name in names {
                let hashes = PathHash.ofNameAndPartials(prefix, name)
                XCTAssertEqual(hashes.name, (prefix + name).hashValue, "\(prefix)\(name)")
                XCTAssertEqual(hashes.part, (prefix + name + ".part").hashValue, "\(prefix)\(name).part")
                XCTAssertEqual(hashes.meta, (prefix + name + ".part.meta").hashValue, "\(prefix)\(name).part.meta")
                XCTAssertEqual(hashes.name, PathHash.of(prefix, name))
                XCTAssertEqual(hashes.part, PathHash.of(prefix, name, adding: ".part"))
                XCTAssertEqual(hashes.meta, PathHash.of(prefix, name, adding: ".part.meta"))
            }
        }
        // Canonically equivalent names are one name, whichever function hashes them.
        XCTAssertEqual(PathHash.ofNameAndPartials("/", "caf\u{E9}").part, PathHash.ofNameAndPartials("/", "cafe\u{301}").part)
        XCTAssertNotEqual(PathHash.ofNameAndPartials("/", "a").name, PathHash.ofNameAndPartials("", "a").name)
    }
}
