/// What ``JobStore/complete(_:thenClaim:)`` did: the outcomes it refused, the jobs it claimed, and the
/// claim's error when the outcomes were recorded but the claim after them failed.
public struct OutcomesThenClaim: Sendable {
    /// The attempts whose outcome was refused (their lease was lost).
    public var refused: [JobLease]
    /// The jobs claimed after the outcomes were recorded.
    public var claimed: [ClaimedJob]
    /// Why nothing was claimed, when the claim failed after the outcomes were recorded (a store that
    /// makes the two writes separately). The outcomes stay recorded: do not write them again.
    public var claimError: (any Error)?

    /// A result with these parts.
    public init(refused: [JobLease] = [], claimed: [ClaimedJob] = [], claimError: (any Error)? = nil) {
        self.refused = refused
        self.claimed = claimed
        self.claimError = claimError
    }
}
