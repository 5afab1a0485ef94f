/// A list that keeps its first element in place and the others in an array: a list of one element, as
/// most jobs' graphs are (one operation), allocates nothing.
///
/// Indices run from 0 to `count - 1`, as an array's.
struct InlineFirstList<Element>: RandomAccessCollection {
    private var head: Element?
    private var tail: [Element] = []

    init() {}

    var startIndex: Int { 0 }
    var endIndex: Int { head == nil ? 0 : 1 + tail.count }

    subscript(position: Int) -> Element {
        if position == 0, let head { return head }
        return tail[position - 1]
    }

    /// Changes the element at `position` in place.
    ///
    /// A function, not a `_modify` accessor: that accessor is a coroutine, and with the array's own
    /// accessor nested in it its frame was allocated on the heap at every use (three `malloc` calls per
    /// job of one operation).
    @inline(__always)
    mutating func update<Result>(at position: Int, _ body: (inout Element) -> Result) -> Result {
        if position == 0 {
            // An index past the end traps, as an array's does; 0 is past the end only when empty.
            precondition(head != nil, "index out of range")
            return body(&head!)
        }
        return body(&tail[position - 1])
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
