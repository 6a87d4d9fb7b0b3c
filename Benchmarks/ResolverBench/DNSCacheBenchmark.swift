import HTTPDNS

/// The value-type cache alone: the core of a cached resolve, without the lock, the statistics or
/// the resolver interface around it. Build in release to get meaningful numbers.
enum DNSCacheBenchmark {
    /// Fills a cache with `entries` fresh names, then looks them up `iterations` times in a
    /// scattered order. Returns nanoseconds per lookup.
    static func measureLookups(entries: Int = 10_000, iterations: Int = 1_000_000) -> Double {
        precondition(entries > 0 && iterations > 0)
        let clock = ContinuousClock()
        let now = clock.now
        var cache = DNSCache<ContinuousClock.Instant>(configuration: .init(capacity: entries))
        let names = (0..<entries).map { "host-\($0).bench.example.com" }
        for (i, name) in names.enumerated() {
            let answer = ResolvedAnswer(ipv4: ["10.0.\(i / 256 % 256).\(i % 256)"], ipv6: [], ttl: .seconds(600))
            cache.store(name, answer: answer, now: now)
        }
        // A stride coprime with `entries` visits every name and defeats the LRU's "already at the
        // front" shortcut.
        var stride = 7_919
        while gcd(stride, entries) != 1 { stride += 1 }
        var position = 0
        var found = 0
        let start = clock.now
        for _ in 0..<iterations {
            if case .fresh = cache.lookup(names[position], now: now) { found += 1 }
            position = (position + stride) % entries
        }
        let elapsed = start.duration(to: clock.now)
        precondition(found == iterations, "benchmark lookups must all hit")
        return nanoseconds(elapsed) / Double(iterations)
    }

    private static func gcd(_ a: Int, _ b: Int) -> Int {
        b == 0 ? a : gcd(b, a % b)
    }
}
