/// A list that keeps its first element in place and the others in an array: a list of one element, as
/// most jobs' graphs are (one operation), allocates nothing.
///
/// Indices run from 0 to `count - 1`, as an array's.
struct InlineFirstList<Element>: RandomAccessCollection, MutableCollection {
    private var head: Element?
    private var tail: [Element] = []

    init() {}

    var startIndex: Int { 0 }
    var endIndex: Int { head == nil ? 0 : 1 + tail.count }

    subscript(position: Int) -> Element {
        get {
            if position == 0, let head { return head }
            return tail[position - 1]
        }
        _modify {
            if position == 0 {
                // An index past the end traps, as an array's does; 0 is past the end only when empty.
                precondition(head != nil, "index out of range")
                yield &head!
            } else {
                yield &tail[position - 1]
            }
        }
    }

    mutating func append(_ element: Element) {
        if head == nil { head = element } else { tail.append(element) }
    }

    /// Empties the list.
    mutating func removeAll() {
        head = nil
        tail = []
    }
}
