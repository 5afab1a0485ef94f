extension Resource {
    /// What a route answers when no ``Resource/Failure`` applies to the request.
    public enum Kind: Sendable {
        /// Content, possibly changing between requests: see ``Resource/versions(_:)``.
        case content([Version])

        /// A fixed status with a small `text/plain` body (`"404 Not Found\n"`), and `Retry-After`
        /// when given.
        case status(Int, retryAfter: RetryAfter?)

        /// A redirect: `Location` is `to` (made absolute with the server's origin when it is a path
        /// starting with a single `/`), with a small `text/plain` body.
        case redirect(to: String, status: Int)
    }
}
