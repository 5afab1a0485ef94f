import Synchronization

/// A registration of a closure observer; releasing it (or calling ``invalidate()``) stops the closure.
///
/// ```swift
/// let token = job.observe { job, event in print(event) }
/// // … keep `token` for as long as you want events
/// token.invalidate()   // or just let it go
/// ```
public final class JobObservation: Sendable {
    private let removal: @Sendable () -> Void
    private let isInvalidated = Atomic<Bool>(false)

    init(removal: @escaping @Sendable () -> Void) {
        self.removal = removal
    }

    /// Stops the observer. Safe to call any number of times, from any thread.
    public func invalidate() {
        if !isInvalidated.exchange(true, ordering: .acquiringAndReleasing) { removal() }
    }

    deinit { invalidate() }
}
