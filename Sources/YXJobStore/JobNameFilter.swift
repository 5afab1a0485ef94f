/// Which job names a claim or a query covers.
public enum JobNameFilter: Sendable, Hashable {
    /// Only these names.
    case only([String])
    /// Every name except these: how a worker that discards unknown jobs finds them.
    case allExcept([String])

    /// Whether `name` passes the filter.
    public func matches(_ name: String) -> Bool {
        switch self {
        case .only(let names): names.contains(name)
        case .allExcept(let names): !names.contains(name)
        }
    }
}
