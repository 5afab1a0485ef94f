import Foundation
import XCTest

@testable import YXDownload

/// File names from URLs (SPEC §4 "Naming").
final class FileNamingTests: XCTestCase {
    func testFileNamesFromURLs() {
        func name(_ text: String) -> String { FileNaming.name(for: URL(string: text)!) }
        XCTAssertEqual(name("https://x.org/a%20b.txt?v=1#frag"), "a b.txt")
        XCTAssertEqual(name("https://x.org/"), "index.html")
        XCTAssertEqual(name("https://x.org"), "index.html")
        XCTAssertEqual(name("https://x.org/dir/%2E%2E"), "__", "a decoded .. is never a name")
        XCTAssertEqual(name("https://x.org/a%2Fb"), "a_b", "a decoded / is replaced, never followed")
        XCTAssertEqual(name("https://x.org/a%5Cb"), "a_b")
        XCTAssertEqual(name("https://x.org/%00evil%0A"), "_evil_")
        XCTAssertEqual(name("https://x.org/%25252F"), "%252F", "decoded once")
        XCTAssertEqual(name("https://x.org/caf%C3%A9.txt"), "café.txt")
        XCTAssertEqual(name("https://x.org/caf%E9.txt"), "caf%E9.txt", "not UTF-8 once decoded: kept as written")
    }

    func testPercentDecodingMatchesFoundation() {
        // The byte-level decoder agrees with `removingPercentEncoding` (which it replaced for speed), except
        // that bytes which are not UTF-8 once decoded make it give up rather than insert U+FFFD.
        let pieces = ["%", "%2", "%2F", "%2f", "%25", "%C3", "%A9", "%E9", "%zz", "%00", "a", "é", "/", "2F", "%%"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 0...6, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }
                .joined()
            var expected = text.removingPercentEncoding
            // Foundation repairs bytes that are not UTF-8 with U+FFFD; names keep such escapes as written.
            if expected?.contains("\u{FFFD}") ?? false { expected = nil }
            XCTAssertEqual(FileNaming.percentDecoded(text[...].utf8), expected, "\(text)")
        }
    }

    /// `sanitize` returns most names as they are after one pass over their bytes; it agrees with the
    /// character-by-character rule on names made of the characters that matter, C1 controls (two bytes
    /// in UTF-8, the first 0xC2), bidirectional controls and their neighbours included.
    func testSanitizeAgreesWithTheCharacterRule() {
        func reference(_ name: String) -> String {
            var result = ""
            for scalar in name.unicodeScalars {
                let bidi: Set<UInt32> = [0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069]
                let invisible: Set<UInt32> = [
                    0xAD, 0x34F, 0x180E, 0x200B, 0x2028, 0x2029, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x206A, 0x206B, 0x206C,
                    0x206D, 0x206E, 0x206F, 0x3164, 0xFFA0, 0xFEFF, 0xFFF9, 0xFFFA, 0xFFFB,
                ]
                let replaced = scalar == "/" || scalar == "\\" || scalar.value < 0x20 || scalar.value == 0x7F
                    || (0x80...0x9F).contains(scalar.value) || bidi.contains(scalar.value) || invisible.contains(scalar.value)
                result.unicodeScalars.append(replaced ? "_" : scalar)
            }
            return result == "." ? "_" : result == ".." ? "__" : result
        }
        XCTAssertEqual(FileNaming.sanitize("report.pdf"), "report.pdf")
        XCTAssertEqual(FileNaming.sanitize("a\u{85}b\u{A0}c\u{9F}"), "a_b\u{A0}c_", "C1 controls, not U+00A0")
        XCTAssertEqual(FileNaming.sanitize(".."), "__")
        // A right-to-left override would show `invoice\u{202E}fdp.exe` as `invoiceexe.pdf` (found by a review).
        XCTAssertEqual(FileNaming.sanitize("invoice\u{202E}fdp.exe"), "invoice_fdp.exe")
        XCTAssertEqual(FileNaming.sanitize("a\u{2066}b\u{2069}c\u{200F}\u{61C}"), "a_b_c__")
        XCTAssertEqual(FileNaming.sanitize("2026–11 – €.txt"), "2026–11 – €.txt", "other characters that start with 0xE2 stay")
        XCTAssertEqual(FileNaming.sanitize("صورة.png"), "صورة.png", "right-to-left letters stay")
        // Invisible characters: `report\u{200B}.pdf` would list as `report.pdf` beside the real one, and a
        // line separator breaks the printed line.
        XCTAssertEqual(FileNaming.sanitize("report\u{200B}.pdf"), "report_.pdf")
        XCTAssertEqual(FileNaming.sanitize("\u{FEFF}a\u{AD}b\u{2028}c\u{2029}d\u{2060}"), "_a_b_c_d_")
        XCTAssertEqual(FileNaming.sanitize("می\u{200C}خواهم.txt"), "می\u{200C}خواهم.txt", "the zero-width non-joiner stays (Persian)")
        XCTAssertEqual(FileNaming.sanitize("ｆｕｌｌ　ｗｉｄｔｈ.txt"), "ｆｕｌｌ　ｗｉｄｔｈ.txt", "other characters that start with 0xEF stay")
        let pieces = ["a", ".", "..", "/", "\\", "\u{0}", "\u{1F}", " ", "\u{7F}", "\u{80}", "\u{9F}", "\u{A0}", "\u{C2}",
                      "é", "€", "😀", "~", "\u{202E}", "\u{202F}", "\u{2069}", "\u{206A}", "\u{200D}", "\u{61C}", "\u{61B}", "–",
                      "\u{AD}", "\u{AC}", "\u{200B}", "\u{200C}", "\u{2028}", "\u{2029}", "\u{2060}", "\u{2064}", "\u{2065}",
                      "\u{FEFF}", "\u{FEFE}", "\u{FF01}", "\u{34F}", "\u{34E}", "\u{180E}", "\u{180D}", "\u{206F}",
                      "\u{2070}", "\u{3164}", "\u{3165}", "\u{FFA0}", "\u{FFA1}", "\u{FFF9}", "\u{FFFB}", "\u{FFFC}", "ệ", "あ"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let name = (0..<Int.random(in: 0...5, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }
                .joined()
            XCTAssertEqual(FileNaming.sanitize(name), reference(name), "\(name.unicodeScalars.map(\.value))")
        }
    }
}
