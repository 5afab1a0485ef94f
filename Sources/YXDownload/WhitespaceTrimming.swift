extension StringProtocol {
    /// The text without leading and trailing whitespace: what `Character.isWhitespace` calls so (spaces
    /// of every script, tabs and line breaks).
    ///
    /// Foundation's `trimmingCharacters(in: .whitespaces)` needs `CharacterSet`, which on Linux links the
    /// whole of swift-corelibs-foundation into a program (see `DetachedThread`).
    ///
    /// ```swift
    /// " 2M\t".trimmingWhitespace()  // "2M"
    /// ```
    package func trimmingWhitespace() -> SubSequence {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map { index(after: $0) } ?? start
        return self[start..<end]
    }
}
