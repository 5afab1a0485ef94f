import Foundation

extension Resource {
    /// The value of a `Retry-After` header.
    public enum RetryAfter: Sendable, Equatable {
        /// A delay, sent as a decimal number of seconds.
        case seconds(Int)

        /// A moment, sent as an HTTP-date (whole seconds, GMT).
        case date(Date)

        /// The header value as sent.
        public var headerValue: String {
            switch self {
            case .seconds(let seconds):
                return String(seconds)
            case .date(let date):
                return HTTPDate.string(from: date)
            }
        }
    }
}
