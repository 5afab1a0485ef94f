
/// A registration of a closure observer; releasing it (or calling ``invalidate()``) stops the closure.
///
/// ```swift
/// let token = job.observe { job, event in print(event) }
/// // … keep `token` for as long as you want events
/// token.invalidate()   // or just let it go
/// ```
public final class JobObservation: Sendable {
    private let removal: Locked<(@Sendable () -> Void)?>

    init(removal: @escaping @Sendable () -> Void) {
        self.removal = Locked(removal)
    }

    /// Stops the observer. Safe to call any number of times, from any thread.
    public func invalidate() {
        let action = removal.withLock { value -> (@Sendable () -> Void)? in
            defer { value = nil }
            return value
        }
        action?()
    }

    deinit { invalidate() }
}
