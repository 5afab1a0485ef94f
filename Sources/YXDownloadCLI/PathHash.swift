/// A 64-bit hash of a path given in pieces, for the sets of names that ``OutputNames`` and
/// ``ExistingFiles`` keep: `prefix + name`, without the name's last `droppingLast` bytes (an ASCII
/// suffix such as `.part`), then `suffix`.
///
/// The hash is the one of the joined path as a `String`, so two paths that Swift calls equal hash
/// alike: canonically equivalent names (`é` as one scalar, or as `e` and an accent; `;` and the Greek
/// question mark) are one name, as they are one file on macOS. An ASCII path is hashed without being
/// joined: its bytes go through one hasher in pieces, then the terminator the standard library adds
/// to a string's bytes, which gives the string's hash (checked once per process; if a standard library
/// ever hashes strings otherwise, every path is joined). With it, `OutputNames.claim` went from 8.1 k to
/// 3.9 k instructions per file (callgrind); hashing a name with its partial files in one pass
/// (``ofNameAndPartials(_:_:)``), seven hashes of a path per file became one pass, and the checks of a
/// file's name (`OutputNames.claim` and `ExistingFiles.presence`) went from 6.8 k to 2.9 k instructions.
enum PathHash {
    static func of(_ prefix: String, _ name: String, droppingLast dropped: Int = 0, adding suffix: String = "") -> Int {
        asciiHasher(prefix, name, droppingLast: dropped, adding: suffix).map(finalized)
            ?? (prefix + String(decoding: name.utf8.dropLast(dropped), as: UTF8.self) + suffix).hashValue
    }

    /// The hashes of `prefix + name` and of its partial files, `+ ".part"` and `+ ".part.meta"`, which
    /// ``OutputNames`` and ``ExistingFiles`` ask about together: the shared bytes go through the hasher
    /// once, not three times.
    static func ofNameAndPartials(_ prefix: String, _ name: String) -> (name: Int, part: Int, meta: Int) {
        guard var hasher = asciiHasher(prefix, name) else {
            return (of(prefix, name), of(prefix, name, adding: ".part"), of(prefix, name, adding: ".part.meta"))
        }
        let whole = finalized(hasher)
        (".part" as StaticString).withUTF8Buffer { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        let part = finalized(hasher)
        (".meta" as StaticString).withUTF8Buffer { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        return (whole, part, finalized(hasher))
    }

    /// A hasher fed with the bytes of an ASCII path (no terminator yet), or nil when a piece is not ASCII,
    /// not contiguous, or strings hash otherwise. The bytes are read in place (`utf8`'s contiguous
    /// storage): a `var` copy of each string to call `withUTF8` cost a retain and a release of its buffer.
    private static func asciiHasher(
        _ prefix: String, _ name: String, droppingLast dropped: Int = 0, adding suffix: String = ""
    ) -> Hasher? {
        guard bytesHashLikeStrings else { return nil }
        let hasher = prefix.utf8.withContiguousStorageIfAvailable { prefix in
            name.utf8.withContiguousStorageIfAvailable { name in
                suffix.utf8.withContiguousStorageIfAvailable { suffix -> Hasher? in
                    let name = UnsafeBufferPointer(rebasing: name.dropLast(dropped))
                    guard isASCII(prefix), isASCII(name), isASCII(suffix) else { return nil }
                    var hasher = Hasher()
                    hasher.combine(bytes: UnsafeRawBufferPointer(prefix))
                    hasher.combine(bytes: UnsafeRawBufferPointer(name))
                    hasher.combine(bytes: UnsafeRawBufferPointer(suffix))
                    return hasher
                }
            }
        }
        // nil from any level (a piece not contiguous, or not ASCII): no hasher.
        guard case .some(.some(.some(.some(let hasher)))) = hasher else { return nil }
        return hasher
    }

    /// The hash of the bytes fed so far, as a string of them hashes (its terminator added).
    private static func finalized(_ hasher: Hasher) -> Int {
        var hasher = hasher
        hasher.combine(UInt8(0xFF))
        return hasher.finalize()
    }

    /// Whether an ASCII string's hash is that of its bytes followed by 0xFF, as the standard library
    /// hashes strings today.
    static let bytesHashLikeStrings: Bool = {
        var sample = "folder/name.part.meta"
        var hasher = Hasher()
        sample.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(UInt8(0xFF))
        return hasher.finalize() == sample.hashValue
    }()

    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.allSatisfy { $0 < 0x80 }
    }
}
