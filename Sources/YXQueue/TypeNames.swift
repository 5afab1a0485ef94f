/// Type names as `String(describing:)` gives them, made once per type.
///
/// `String(describing:)` reflects on the type at each call (6.7 k instructions for a definition's
/// name), more than the rest of a small job; the default names of jobs (``Job/name``) and definitions
/// (``JobDefinition/name``) come from here instead.
enum TypeNames {
    private static let names = Locked<[ObjectIdentifier: String]>([:])

    /// `String(describing: type)`, made on the first call for each type.
    static func name(of type: Any.Type) -> String {
        let id = ObjectIdentifier(type)
        if let known = names.withLock({ $0[id] }) { return known }
        let made = String(describing: type)
        names.withLock { $0[id] = made }
        return made
    }
}
