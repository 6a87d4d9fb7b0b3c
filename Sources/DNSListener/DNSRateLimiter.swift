import ProxyConfig
import ProxyKit

/// Per-client token buckets for the DNS listener: `rate` queries a second, bursts of as many
/// again. A value type without a clock (every call takes `now`); the table of clients is bounded:
/// beyond `capacity` the clients whose bucket has filled up again are forgotten (which changes
/// nothing for them), and if that is not enough, all are (failing open, never growing).
struct DNSRateLimiter<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration, Instant: Sendable {
    let rate: Double
    let burst: Double
    let capacity: Int
    private(set) var buckets: [IPAddress: TokenBucket<Instant>] = [:]

    /// `rate` > 0 queries a second per client.
    init(rate: Int, capacity: Int = 65_536) {
        self.rate = Double(rate)
        self.burst = Double(max(1, rate))
        self.capacity = max(1, capacity)
    }

    /// Whether `client` may send one more query now (taking a token if so).
    mutating func allow(_ client: IPAddress, now: Instant) -> Bool {
        if buckets[client] == nil, buckets.count >= capacity { forgetFull(now: now) }
        return buckets[client, default: TokenBucket(rate: rate, burst: burst)].take(now: now) == nil
    }

    private mutating func forgetFull(now: Instant) {
        buckets = buckets.filter { !$0.value.isFull(at: now) }
        if buckets.count >= capacity { buckets.removeAll(keepingCapacity: true) }
    }
}
