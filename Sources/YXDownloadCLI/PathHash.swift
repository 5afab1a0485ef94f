/// A 64-bit hash of a path given in pieces, for the sets of names that ``OutputNames`` and
/// ``ExistingFiles`` keep: `prefix + name`, without the name's last `droppingLast` bytes (an ASCII
/// suffix such as `.part`), then `suffix`.
///
/// An ASCII path's bytes go through one hasher in pieces (which hashes them as it would their
/// concatenation), so no string is built: the common case, about a tenth of the instructions of joining
/// the pieces and hashing the result. Any other path is hashed as a `String`, so that two canonically
/// equivalent names (`é` as one scalar, or as `e` and an accent) hash alike, as they name one file on
/// macOS. A path is hashed one way or the other by its content alone, so equal paths hash alike.
enum PathHash {
    static func of(_ prefix: String, _ name: String, droppingLast dropped: Int = 0, adding suffix: String = "") -> Int {
        var hasher = Hasher()
        var prefix = prefix
        var name = name
        var suffix = suffix
        let ascii = prefix.withUTF8(isASCII) && name.withUTF8(isASCII) && suffix.withUTF8(isASCII)
        guard ascii else {
            hasher.combine(prefix + String(decoding: name.utf8.dropLast(dropped), as: UTF8.self) + suffix)
            return hasher.finalize()
        }
        prefix.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        name.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: $0.dropLast(dropped)))) }
        suffix.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        return hasher.finalize()
    }

    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.allSatisfy { $0 < 0x80 }
    }
}
