import Foundation

extension Resource {
    /// One state of a content resource: its body and its validators.
    public struct Version: Sendable {
        /// The body of this version.
        public var body: BodySource

        /// The entity-tag, sent as `ETag`; quoted for you unless it starts with `"` or `W/"`.
        public var etag: String?

        /// The modification date, sent as `Last-Modified` (an HTTP-date, whole seconds).
        public var lastModified: Date?

        /// Creates a version.
        ///
        /// - Parameters:
        ///   - body: The body of this version.
        ///   - etag: See ``etag``.
        ///   - lastModified: See ``lastModified``.
        public init(_ body: BodySource, etag: String? = nil, lastModified: Date? = nil) {
            self.body = body
            self.etag = etag
            self.lastModified = lastModified
        }

        /// The `ETag` header value: `etag` quoted unless it already is (or is weak).
        var etagHeaderValue: String? {
            guard let etag = self.etag else { return nil }
            if etag.hasPrefix("\"") || etag.hasPrefix("W/\"") {
                return etag
            }
            return "\"\(etag)\""
        }

        /// The `Last-Modified` header value.
        var lastModifiedHeaderValue: String? {
            self.lastModified.map(HTTPDate.string(from:))
        }
    }
}
