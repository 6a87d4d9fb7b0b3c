/// A token bucket: `rate` tokens a second, at most `burst` saved up, starting full. A value type
/// without a clock: every call takes `now`, so tests drive time by hand.
package struct TokenBucket<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration, Instant: Sendable {
    let rate: Double
    let burst: Double
    private var tokens: Double
    private var updated: Instant?

    /// `rate` > 0 tokens a second; `burst` ≥ 1 (default 1: no bursts beyond the rate).
    package init(rate: Double, burst: Double = 1) {
        precondition(rate > 0 && burst >= 1, "a token bucket needs a positive rate and a burst of at least 1")
        self.rate = rate
        self.burst = burst
        self.tokens = burst
    }

    /// Takes one token and returns nil, or returns how long until one is available (and takes none).
    package mutating func take(now: Instant) -> Duration? {
        if let updated {
            let elapsed = updated.duration(to: now)
            if elapsed > .zero {
                tokens = min(burst, tokens + elapsed.seconds * rate)
                self.updated = now
            }
        } else {
            updated = now
        }
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return .seconds((1 - tokens) / rate)
    }

    /// Whether the bucket holds `burst` tokens at `now` (forgetting it then changes nothing).
    package func isFull(at now: Instant) -> Bool {
        guard let updated else { return true }
        let elapsed = updated.duration(to: now)
        return tokens + max(0, elapsed.seconds) * rate >= burst
    }
}

extension Duration {
    /// The duration in seconds as a floating-point number.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
