/// The last `capacity` elements appended; older ones are overwritten.
package struct RingBuffer<Element: Sendable>: Sendable {
    let capacity: Int
    private var storage: [Element] = []
    private var next = 0
    /// Elements ever appended (including overwritten ones).
    private(set) var appended = 0

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
        storage.reserveCapacity(self.capacity)
    }

    package mutating func append(_ element: Element) {
        appended += 1
        if storage.count < capacity {
            storage.append(element)
        } else {
            storage[next] = element
        }
        next = (next + 1) % capacity
    }

    /// The kept elements, newest first.
    package var newestFirst: [Element] {
        guard storage.count == capacity else { return storage.reversed() }
        return Array((storage[next...] + storage[..<next]).reversed())
    }
}
