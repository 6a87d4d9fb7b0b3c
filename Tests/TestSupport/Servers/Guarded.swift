import Foundation

/// A value protected by an `NSCondition`: every mutation wakes up waiters, and waits always have a
/// deadline. Test servers' event loops change it; tests read it, or await a state of it with
/// `first(within:_:)`, which suspends the task instead of holding a thread.
package final class Guarded<Value>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Value
    /// Suspended `first(within:_:)` callers, resumed (once each) at the next change or their deadline.
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiter: UInt64 = 0
    /// Counts changes, so a change between a waiter's check and its suspension is not missed.
    private var generation: UInt64 = 0

    package init(_ value: Value) {
        self.value = value
    }

    /// Reads or mutates the value under the lock, then wakes every waiter.
    @discardableResult
    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        condition.lock()
        defer { unlockAfterChange() }
        return try body(&value)
    }

    /// Blocks the calling thread until `extract` returns non-nil or the timeout passes (then nil).
    /// For helpers that already run on threads of their own (a child process's output readers);
    /// tests await `first(within:_:)`.
    package func wait<R>(timeout: Duration, _ extract: (Value) -> R?) -> R? {
        let deadline = Date().addingTimeInterval(timeout.timeInterval)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let result = extract(value) { return result }
            if Date() >= deadline { return nil }
            _ = condition.wait(until: deadline)
        }
    }

    /// The first non-nil `extract` of the value, checked now and after every change; nil when
    /// `timeout` passes first (a guard against a hang, not a measure of time) or the task is
    /// cancelled (a test past its time limit).
    package func first<R>(within timeout: Duration, _ extract: (Value) -> R?) async -> R? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let (result, seen) = check(extract)
            if let result { return result }
            if ContinuousClock.now >= deadline || Task.isCancelled { return nil }
            let id = newWaiter()
            let timer = Task { [weak self] in
                try? await Task.sleep(until: deadline, clock: .continuous)
                if !Task.isCancelled { self?.resume(id) }
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    suspend(id, continuation, unlessChangedSince: seen, deadline: deadline)
                }
            } onCancel: {
                resume(id)
            }
            timer.cancel()
        }
    }

    // The lock is taken only in these synchronous helpers (NSCondition refuses async contexts).

    private func unlockAfterChange() {
        generation &+= 1
        let woken = Array(waiters.values)
        waiters.removeAll()
        condition.broadcast()
        condition.unlock()
        for continuation in woken { continuation.resume() }
    }

    private func check<R>(_ extract: (Value) -> R?) -> (R?, UInt64) {
        condition.lock()
        defer { condition.unlock() }
        return (extract(value), generation)
    }

    private func newWaiter() -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        nextWaiter &+= 1
        return nextWaiter
    }

    /// Parks `continuation` until the next change, the deadline or cancellation; resumes it at
    /// once when the value changed since generation `seen`, or when the deadline has passed or the
    /// task was cancelled (its timer or cancellation handler found no waiter then).
    private func suspend(
        _ id: UInt64, _ continuation: CheckedContinuation<Void, Never>, unlessChangedSince seen: UInt64,
        deadline: ContinuousClock.Instant
    ) {
        condition.lock()
        if generation != seen || ContinuousClock.now >= deadline || Task.isCancelled {
            condition.unlock()
            continuation.resume()
            return
        }
        waiters[id] = continuation
        condition.unlock()
    }

    private func resume(_ id: UInt64) {
        condition.lock()
        let continuation = waiters.removeValue(forKey: id)
        condition.unlock()
        continuation?.resume()
    }
}

extension Duration {
    /// This duration in seconds, as a `TimeInterval`.
    package var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
