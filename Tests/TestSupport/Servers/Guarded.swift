import Foundation

/// A value protected by an `NSCondition`: every mutation wakes up waiters, and waits always have a deadline.
final class Guarded<Value>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Reads or mutates the value under the lock, then wakes every waiter.
    @discardableResult
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return try body(&value)
    }

    /// Waits until `extract` returns non-nil or the timeout passes (then returns nil).
    func wait<R>(timeout: Duration, _ extract: (Value) -> R?) -> R? {
        let deadline = Date().addingTimeInterval(timeout.timeInterval)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let result = extract(value) { return result }
            if Date() >= deadline { return nil }
            _ = condition.wait(until: deadline)
        }
    }
}

extension Duration {
    /// This duration in seconds, as a `TimeInterval`.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
