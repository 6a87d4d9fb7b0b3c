/// Which names a background check (system DNS comparison, address probing) looks at next: each name
/// at most once per interval (its answer's TTL, at least `minInterval`), through a bounded FIFO
/// queue. A value type without a clock: every call takes `now`.
package struct RecheckQueue<Job: Sendable, Instant: InstantProtocol & Sendable>: Sendable where Instant.Duration == Duration {
    package enum Offer: Equatable, Sendable {
        case queued
        /// The name was queued or checked less than its interval ago.
        case tooSoon
        /// The queue (or the table of remembered names) is full: the job is dropped and counted.
        case dropped
    }

    let capacity: Int
    let minInterval: Duration
    /// Names remembered with their next allowed check; beyond it, expired ones are forgotten and,
    /// if none has expired, new names are dropped.
    let maxNames: Int
    private var queue: [(name: String, job: Job)] = []
    private var head = 0
    private var nextAllowed: [String: Instant] = [:]
    /// When the name table was last swept: a full table of unexpired names is swept at most once a
    /// second, not on every offer (each sweep walks all `maxNames`).
    private var lastSweep: Instant?
    package private(set) var dropped = 0

    package init(capacity: Int, minInterval: Duration, maxNames: Int = 4096) {
        self.capacity = max(1, capacity)
        self.minInterval = minInterval
        self.maxNames = max(1, maxNames)
    }

    package var count: Int { queue.count - head }

    /// Queues `job` for `name` unless the name is not due yet or there is no room.
    package mutating func offer(_ name: String, job: Job, interval: Duration, now: Instant) -> Offer {
        if let next = nextAllowed[name], now < next { return .tooSoon }
        guard count < capacity else {
            dropped += 1
            return .dropped
        }
        if nextAllowed[name] == nil, nextAllowed.count >= maxNames {
            if lastSweep.map({ $0.duration(to: now) >= .seconds(1) }) ?? true {
                lastSweep = now
                nextAllowed = nextAllowed.filter { now < $0.value }
            }
            guard nextAllowed.count < maxNames else {
                dropped += 1
                return .dropped
            }
        }
        nextAllowed[name] = now.advanced(by: max(interval, minInterval))
        queue.append((name, job))
        return .queued
    }

    /// The oldest queued job.
    package mutating func next() -> (name: String, job: Job)? {
        guard head < queue.count else { return nil }
        let item = queue[head]
        head += 1
        if head > 32, head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
        return item
    }

    /// Forgets when names were checked (a network change makes earlier results meaningless).
    package mutating func forgetSchedule() {
        nextAllowed.removeAll()
    }
}
