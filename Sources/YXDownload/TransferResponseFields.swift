/// The values of the header fields a ``TransferResponse`` keeps, one slot per name of
/// ``TransferResponse/keptFieldNames``: six optional strings in place, where a `[String: String]` cost an
/// allocation and a string hash per field and per lookup (about 5,000 instructions per file, callgrind).
struct TransferResponseFields: Sendable {
    private(set) var contentLength: String?
    private(set) var contentRange: String?
    private(set) var etag: String?
    private(set) var lastModified: String?
    private(set) var retryAfter: String?
    private(set) var transferEncoding: String?

    /// The value of the field at `index` in ``TransferResponse/keptFieldNames``.
    subscript(index: Int) -> String? {
        get {
            switch index {
            case 0: contentLength
            case 1: contentRange
            case 2: etag
            case 3: lastModified
            case 4: retryAfter
            case 5: transferEncoding
            default: nil
            }
        }
        set {
            switch index {
            case 0: contentLength = newValue
            case 1: contentRange = newValue
            case 2: etag = newValue
            case 3: lastModified = newValue
            case 4: retryAfter = newValue
            case 5: transferEncoding = newValue
            default: break
            }
        }
    }

    /// The value of the field called `name` (lower case); nil for a field that is not kept.
    subscript(name: String) -> String? {
        TransferResponse.keptFieldNames.firstIndex(of: name).flatMap { self[$0] }
    }
}
