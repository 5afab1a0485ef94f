/// Why a run ended before its list did: what the summary says after its counts.
package enum RunStop: Sendable, Equatable {
    /// SIGINT, SIGTERM or SIGHUP (its name): the downloads were canceled, their `.part` files kept.
    case signal(String)
    /// The list was not the one that was checked when the run read it again (the sentence that says
    /// how): the entries from the change on were not read.
    case listChanged(String)
}
