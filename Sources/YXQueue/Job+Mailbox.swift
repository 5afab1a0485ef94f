import DequeModule

extension Job {
    /// A job's undelivered mail, in order, with no storage until the first mail.
    ///
    /// An empty `Deque` is not free: every empty deque shares one buffer object, which is reference
    /// counted. Each job retained it where it was made and released it where it was freed, often two
    /// threads, so that object's count moved between their cores with every job (issue #14). Most jobs
    /// of a busy program post nothing at all (no one listens), or post once they run.
    struct Mailbox: Sequence {
        private var items: Deque<Mail>?

        init() {}

        var isEmpty: Bool { items?.isEmpty ?? true }
        var count: Int { items?.count ?? 0 }

        /// Adds mail at the end. The first mail makes room for four: most jobs post two or three events.
        mutating func append(_ mail: consuming Mail) {
            if items == nil { items = Deque(minimumCapacity: 4) }
            items?.append(mail)
        }

        /// Removes and returns the first mail, if any (moved out, not copied).
        mutating func popFirst() -> Mail? {
            items?.popFirst()
        }

        struct Iterator: IteratorProtocol {
            fileprivate var base: Deque<Mail>.Iterator?
            mutating func next() -> Mail? { base?.next() }
        }

        func makeIterator() -> Iterator { Iterator(base: items?.makeIterator()) }
    }
}
