/// An `Int` stored in 32 bits: for counts that are bounded by what fits in memory (operations of one
/// graph), in structs whose size matters (see ``JobManager/GraphBox``). A value beyond 32 bits wraps.
@propertyWrapper
struct Int32Stored {
    private var stored: Int32

    init(wrappedValue: Int) {
        stored = Int32(truncatingIfNeeded: wrappedValue)
    }

    var wrappedValue: Int {
        get { Int(stored) }
        set { stored = Int32(truncatingIfNeeded: newValue) }
    }
}
