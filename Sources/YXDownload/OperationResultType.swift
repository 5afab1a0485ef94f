extension Optional where Wrapped == any Sendable {
    /// Whether this operation result is a `T` itself, told by its dynamic type alone.
    ///
    /// `result is T` goes through the runtime's cast (`swift_dynamicCast`): about 400 instructions a
    /// check on a download's steps (callgrind, 2026-11-29), asked after every step of every download.
    /// Comparing the metatypes costs a few. It answers like `is` for a value stored as a `T` itself,
    /// which is how this module's steps finish (`.success(result)`), and `false` for a `T` wrapped in an
    /// optional inside the existential, which they never produce.
    func holds<T>(exactly type: T.Type) -> Bool {
        guard let value = self else { return false }
        return Swift.type(of: value) == type
    }
}
