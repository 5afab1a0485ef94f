import Foundation

extension Resource {
    /// The value of a `Retry-After` header.
    public enum RetryAfter: Sendable, Equatable {
        /// A delay, sent as a decimal number of seconds.
        case seconds(Int)

        /// A moment, sent as an HTTP-date (whole seconds, GMT).
        case date(Date)

        /// Any text, sent as it is: a negative number, a number too large for any clock, garbage.
        case raw(String)

        /// The header value as sent.
        public var headerValue: String {
            switch self {
            case .seconds(let seconds):
                return String(seconds)
            case .date(let date):
                return HTTPDate.string(from: date)
            case .raw(let text):
                return text
            }
        }
    }
}
