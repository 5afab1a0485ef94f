import Foundation
import YXDownload

@testable import YXDownloadCLI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Fuzz target `list-parser`: the bytes of an input list file → `InputList` (LineReader + DownloadListParser,
// both passes, as `yxdownload` reads a list) → entries or `FILE:LINE: reason` errors.
//
// An input that starts with a byte from 0x81 on gets a long comment line first, so that it straddles
// LineReader's 64 KiB read boundary (see `fileBytes`).
// Properties:
// - both passes agree with each other and with the parser fed the file split on `\n` in memory;
// - an entry has an http(s) URL with a host; its out= and every dir= component are safe path components
//   (no `..`, `.`, `/`, `\`, NUL or control character; so never absolute and never climbing out);
// - entry lines rise strictly and are URL lines (not indented); no error is on an entry's URL line;
// - errors are in line order, within the file, and read `FILE:LINE: reason` with a one-line reason.

/// The file the lists are written to, one per fuzzing process.
private let listPath = NSTemporaryDirectory() + "/yxdownload-fuzz-list-\(getpid()).txt"

/// The bytes of the file for this input: the input itself when it starts with an ASCII byte; otherwise
/// its first byte is a layout byte: 0x80 drops it, 0x81 to 0xFF put a comment line first so that the rest
/// of the input starts between 61,472 and 65,504 bytes into the file, across LineReader's 64 KiB reads.
private func fileBytes(_ input: [UInt8]) -> [UInt8] {
    guard let layout = input.first, layout >= 0x80 else { return input }
    guard layout > 0x80 else { return Array(input.dropFirst()) }
    let start = (1 << 16) - Int(layout & 0x7F) * 32
    let comment = [UInt8(ascii: "#")] + Array(repeating: UInt8(ascii: "x"), count: start - 2) + [UInt8(ascii: "\n")]
    return comment + input.dropFirst()
}

private func store(_ bytes: [UInt8], at path: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    require(fd >= 0, "cannot create \(path): errno \(errno)")
    defer { close(fd) }
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        require(written > 0, "cannot write \(path): errno \(errno)")
        offset += written
    }
}

/// The file's lines as the parser should see them: split on `\n`, no line after a final `\n`; each with
/// whether its bytes are valid UTF-8 (`LineReader` tells the parser, which then reports the line as not
/// UTF-8 text).
private func lines(of file: [UInt8]) -> [(text: String, isValidUTF8: Bool)] {
    var lines = file.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    if lines.last?.isEmpty == true { lines.removeLast() }
    return lines.map { (String(decoding: $0, as: UTF8.self), String(validating: $0, as: UTF8.self) != nil) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzListParser(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let file = fileBytes(inputBytes(data, count))
    store(file, at: listPath)

    // What `yxdownload` does: check every line, then read the entries again.
    let list: InputList
    do {
        list = try InputList(path: listPath)
    } catch {
        require(false, "cannot open the list: \(error)")
        return 0
    }
    let check: InputList.Check
    do {
        check = try list.check()
    } catch {
        require(false, "the first pass failed: \(error)")
        return 0
    }
    // The same file, split in memory.
    let text = lines(of: file)
    var parser = DownloadListParser(fileName: listPath)
    var expected: [DownloadListEntry] = []
    for (index, line) in text.enumerated() {
        if let entry = parser.consume(line.text, number: index + 1, isValidUTF8: line.isValidUTF8) { expected.append(entry) }
    }
    if let last = parser.finish() { expected.append(last) }
    require(check.errors == parser.errors, "InputList found \(check.errors), in memory \(parser.errors)")
    require(check.entries == expected.count, "first pass: \(check.entries) entries, in memory \(expected.count)")

    // The second pass, as `yxdownload` reads it: only after a check without errors (a list with a bad line
    // downloads nothing; since 06d44b8 a second pass that meets a line that does not parse ends as "the
    // input list changed after it was checked", so this harness failed on every invalid list).
    var entries = expected
    if check.errors.isEmpty {
        entries = []
        var second = list.entries()
        while let entry = second.next() { entries.append(entry) }
        require(second.failure == nil, "the second pass failed: \(second.failure ?? "")")
        require(entries == expected, "InputList read \(entries), in memory \(expected)")
    }

    // Entries.
    var previousLine = 0
    for entry in entries {
        let scheme = entry.url.scheme?.lowercased()
        require(scheme == "http" || scheme == "https", "entry with URL \(entry.url)")
        require(!(entry.url.host ?? "").isEmpty, "entry without a host: \(entry.url)")
        if let out = entry.out { require(isSafeComponent(out), "out=\(out.debugDescription) on line \(entry.line)") }
        for component in entry.dir {
            require(isSafeComponent(component), "dir component \(component.debugDescription) on line \(entry.line)")
        }
        require(
            entry.line > previousLine && entry.line <= text.count, "entry on line \(entry.line) after \(previousLine)")
        let first = text[entry.line - 1].text.utf8.first
        require(first != UInt8(ascii: " ") && first != UInt8(ascii: "\t"), "entry from the indented line \(entry.line)")
        previousLine = entry.line
    }

    // Errors.
    let entryLines = Set(entries.map(\.line))
    var previousError = 0
    for error in check.errors {
        require(
            error.line >= previousError && (1...max(1, text.count)).contains(error.line), "error on line \(error.line)")
        require(!entryLines.contains(error.line), "line \(error.line) gave an entry and an error")
        require(error.file == listPath, "error names \(error.file)")
        require(error.description == "\(listPath):\(error.line): \(error.reason)", "error reads \(error.description)")
        require(!error.reason.isEmpty, "empty reason on line \(error.line)")
        require(
            !error.reason.unicodeScalars.contains(where: isControl),
            "reason \(error.reason.debugDescription) on line \(error.line) is not one printable line")
        previousError = error.line
    }
    return 0
}
