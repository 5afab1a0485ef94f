import Crypto
import Foundation
import XCTest
import YXTestServer

final class GeneratedContentTests: XCTestCase {
    func testAnyRangeEqualsTheSameSliceOfTheWholeContent() {
        let whole = GeneratedContent.bytes(size: 1000, seed: 3)
        XCTAssertEqual(whole.count, 1000)
        let ranges: [Range<Int64>] = [0..<1000, 1..<9, 7..<8, 8..<16, 13..<999, 995..<1000, 500..<500, 3..<5]
        for range in ranges {
            let slice = GeneratedContent.bytes(size: 1000, seed: 3, range: range)
            XCTAssertEqual(slice, whole[Int(range.lowerBound)..<Int(range.upperBound)], "range \(range)")
        }
        for index in [0, 1, 7, 8, 9, 999] {
            XCTAssertEqual(GeneratedContent.byte(at: Int64(index), seed: 3), whole[index])
        }
    }

    func testStreamingDigestEqualsDigestOfTheBytes() {
        let size: Int64 = 3 * 1024 * 1024 + 17  // more than one 1 MiB piece, odd tail
        let bytes = GeneratedContent.bytes(size: size, seed: 9)
        XCTAssertEqual(GeneratedContent.sha256(size: size, seed: 9), sha256Hex(bytes))
    }

    func testDigestOfEmptyContentIsTheEmptyDigest() {
        XCTAssertEqual(
            GeneratedContent.sha256(size: 0, seed: 1),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        )
    }

    func testSeedsGiveDifferentContent() {
        XCTAssertNotEqual(GeneratedContent.bytes(size: 64, seed: 1), GeneratedContent.bytes(size: 64, seed: 2))
        XCTAssertNotEqual(GeneratedContent.bytes(size: 64, seed: 0), Data(count: 64))
    }

    /// The byte sequence is a contract: other tests may pin digests of it. These values were also
    /// computed by an independent implementation of the documented algorithm (splitmix64).
    func testContentIsPinned() {
        XCTAssertEqual(Array(GeneratedContent.bytes(size: 8, seed: 42)), [57, 192, 145, 251, 159, 23, 103, 167])
        XCTAssertEqual(
            GeneratedContent.sha256(size: 1 << 20, seed: 42),
            "18f0206f55599e5fdfe53b6daf333f6900396762f2aa4cd1faecaede245e1d7b"
        )
    }

    func testBodySourceSlicesAgree() {
        let data = Data((0..<100).map { UInt8($0) })
        XCTAssertEqual(BodySource.bytes(data).bytes(in: 10..<20), data[10..<20])
        XCTAssertEqual(BodySource.bytes(data).size, 100)
        XCTAssertEqual(
            BodySource.generated(size: 100, seed: 5).bytes(in: 10..<20),
            GeneratedContent.bytes(size: 100, seed: 5, range: 10..<20)
        )
    }
}
