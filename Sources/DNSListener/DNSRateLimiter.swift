import ProxyConfig
import ProxyKit

/// Per-client token buckets for the DNS listener: `rate` queries a second, bursts of as many
/// again. A value type without a clock (every call takes `now`); the table of clients is bounded:
/// beyond `capacity` the clients idle long enough to have a full bucket are forgotten (which
/// changes nothing for them), and if that is not enough, all are (failing open, never growing).
struct DNSRateLimiter<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration, Instant: Sendable {
    struct Bucket: Sendable {
        var tokens: Double
        var updated: Instant
    }

    let rate: Double
    let burst: Double
    let capacity: Int
    private(set) var buckets: [IPAddress: Bucket] = [:]

    /// `rate` > 0 queries a second per client.
    init(rate: Int, capacity: Int = 65_536) {
        self.rate = Double(rate)
        self.burst = Double(max(1, rate))
        self.capacity = max(1, capacity)
    }

    /// Whether `client` may send one more query now (taking a token if so).
    mutating func allow(_ client: IPAddress, now: Instant) -> Bool {
        if var bucket = buckets[client] {
            let elapsed = bucket.updated.duration(to: now)
            if elapsed > .zero {
                let (seconds, attoseconds) = elapsed.components
                bucket.tokens = min(burst, bucket.tokens + (Double(seconds) + Double(attoseconds) / 1e18) * rate)
                bucket.updated = now
            }
            guard bucket.tokens >= 1 else {
                buckets[client] = bucket
                return false
            }
            bucket.tokens -= 1
            buckets[client] = bucket
            return true
        }
        if buckets.count >= capacity { forgetIdle(now: now) }
        buckets[client] = Bucket(tokens: burst - 1, updated: now)
        return true
    }

    private mutating func forgetIdle(now: Instant) {
        let refill = Duration.seconds(burst / rate)
        buckets = buckets.filter { $0.value.updated.duration(to: now) < refill }
        if buckets.count >= capacity { buckets.removeAll(keepingCapacity: true) }
    }
}
