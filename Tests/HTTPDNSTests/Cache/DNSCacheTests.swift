import Testing

@testable import HTTPDNS

/// The cache core alone: instants are handed in, nothing runs in the background.
@Suite struct DNSCacheTests {
    typealias Cache = DNSCache<ManualClock.Instant>

    func t(_ seconds: Double) -> ManualClock.Instant { ManualClock.Instant(offset: .seconds(seconds)) }

    let a = answer("192.0.2.1", ttl: .seconds(60))

    /// Hits are counted in the entry and handed over in batches; none is lost when the entry is
    /// replaced, evicted or removed, and none is reported twice.
    @Test func unreportedHitsSurviveReplacementEvictionAndRemoval() {
        var cache = Cache(configuration: .init(capacity: 2))
        func taken() -> [String: HitCounts] {
            Dictionary(uniqueKeysWithValues: cache.takeUnreportedHits().map { ($0.name, $0.hits) })
        }
        cache.store("a.example", answer: a, now: t(0))
        cache.store("b.example", answer: a, now: t(0))
        _ = cache.lookup("b.example", now: t(1))
        _ = cache.lookup("a.example", now: t(1))
        _ = cache.lookup("A.Example.", now: t(61))  // stale
        cache.store("a.example", answer: a, now: t(62))  // replaced: keeps its counts
        _ = cache.lookup("a.example", now: t(63))
        cache.store("c.example", answer: a, now: t(64))  // evicts b (least recently used)
        #expect(taken() == ["a.example": HitCounts(fresh: 2, stale: 1), "b.example": HitCounts(fresh: 1)])
        #expect(taken().isEmpty)
        _ = cache.lookup("c.example", now: t(65))
        cache.remove("c.example")
        cache.storeNegative("nx.example", failure: ResolveFailure(kind: .nxdomain, message: "x", negativeTTL: .seconds(10)), now: t(65))
        _ = cache.lookup("nx.example", now: t(66))
        _ = cache.lookup("a.example", now: t(66))
        cache.removeAll()
        #expect(taken() == ["c.example": HitCounts(fresh: 1), "nx.example": HitCounts(negative: 1), "a.example": HitCounts(fresh: 1)])
    }

    @Test func ttlIsClampedToMinAndMax() {
        var cache = Cache(configuration: .init(minTTL: .seconds(10), maxTTL: .seconds(100)))
        cache.store("short.example", answer: answer("192.0.2.1", ttl: .seconds(2)), now: t(0))
        cache.store("long.example", answer: answer("192.0.2.2", ttl: .seconds(86_400)), now: t(0))
        cache.store("mid.example", answer: answer("192.0.2.3", ttl: .seconds(50)), now: t(0))
        #expect(cache.lookup("short.example", now: t(0)) == .fresh(answer("192.0.2.1", ttl: .seconds(2)), remaining: .seconds(10)))
        #expect(cache.lookup("long.example", now: t(0)) == .fresh(answer("192.0.2.2", ttl: .seconds(86_400)), remaining: .seconds(100)))
        #expect(cache.lookup("mid.example", now: t(0)) == .fresh(answer("192.0.2.3", ttl: .seconds(50)), remaining: .seconds(50)))
    }

    @Test func defaultsHonourTheServiceUpToOneHour() {
        var cache = Cache()
        cache.store("zero.example", answer: answer("192.0.2.1", ttl: .zero), now: t(0))
        cache.store("day.example", answer: answer("192.0.2.2", ttl: .seconds(86_400)), now: t(0))
        #expect(cache.lookup("zero.example", now: t(0)) == .stale(answer("192.0.2.1", ttl: .zero), age: .zero))
        #expect(cache.lookup("day.example", now: t(0)) == .fresh(answer("192.0.2.2", ttl: .seconds(86_400)), remaining: .seconds(3600)))
    }

    @Test func entryExpiresExactlyAtItsTTL() {
        var cache = Cache()
        cache.store("a.example", answer: a, now: t(100))
        #expect(cache.lookup("a.example", now: t(160).advanced(by: .milliseconds(-1))) == .fresh(a, remaining: .milliseconds(1)))
        #expect(cache.lookup("a.example", now: t(160)) == .stale(a, age: .zero))
    }

    @Test func staleIsServedWithinMaxStaleAndNotAfter() {
        var cache = Cache(configuration: .init(maxStale: .seconds(30)))
        cache.store("a.example", answer: a, now: t(0))
        #expect(cache.lookup("a.example", now: t(89.5)) == .stale(a, age: .seconds(29.5)))
        #expect(cache.lookup("a.example", now: t(90)) == .miss)
        #expect(cache.count == 0, "an entry past the stale window is freed")
        #expect(cache.lookup("a.example", now: t(60)) == .miss)
    }

    @Test func negativeAnswersAreCappedAt30Seconds() {
        var cache = Cache()
        let nx = ResolveFailure(kind: .nxdomain, message: "no such name")
        let longSOA = ResolveFailure(kind: .noData, message: "no AAAA", negativeTTL: .seconds(900))
        cache.storeNegative("nx.example", failure: nx, now: t(0))
        cache.storeNegative("soa.example", failure: longSOA, now: t(0))
        #expect(cache.lookup("nx.example", now: t(29.9)) == .negative(nx))
        #expect(cache.lookup("soa.example", now: t(29.9)) == .negative(longSOA))
        #expect(cache.lookup("nx.example", now: t(30)) == .miss)
        #expect(cache.lookup("soa.example", now: t(30)) == .miss)
    }

    @Test func negativeTTLUsesTheShorterSOAValue() {
        var cache = Cache()
        let shortSOA = ResolveFailure(kind: .nxdomain, message: "no such name", negativeTTL: .seconds(5))
        cache.storeNegative("nx.example", failure: shortSOA, now: t(0))
        #expect(cache.lookup("nx.example", now: t(4.9)) == .negative(shortSOA))
        #expect(cache.lookup("nx.example", now: t(5)) == .miss)
    }

    @Test func negativeAndPositiveEntriesReplaceEachOther() {
        var cache = Cache()
        let nx = ResolveFailure(kind: .nxdomain, message: "gone")
        cache.store("a.example", answer: a, now: t(0))
        cache.storeNegative("a.example", failure: nx, now: t(1))
        #expect(cache.lookup("a.example", now: t(2)) == .negative(nx))
        cache.store("a.example", answer: a, now: t(3))
        #expect(cache.lookup("a.example", now: t(3)) == .fresh(a, remaining: .seconds(60)))
        #expect(cache.count == 1)
    }

    @Test func leastRecentlyUsedIsEvictedAtCapacity() {
        var cache = Cache(configuration: .init(capacity: 3))
        for name in ["a", "b", "c"] {
            cache.store("\(name).example", answer: a, now: t(0))
        }
        // Touching "a" saves it: "b" is now the least recently used.
        _ = cache.lookup("a.example", now: t(1))
        cache.store("d.example", answer: a, now: t(2))
        #expect(cache.count == 3)
        #expect(cache.lookup("b.example", now: t(2)) == .miss)
        #expect(cache.namesByRecency == ["d.example", "a.example", "c.example"])
        cache.store("e.example", answer: a, now: t(3))
        #expect(cache.namesByRecency == ["e.example", "d.example", "a.example"])
    }

    @Test func evictionReusesSlotsAndKeepsTheListConsistent() {
        var cache = Cache(configuration: .init(capacity: 50))
        for i in 0..<500 {
            cache.store("n\(i % 120).example", answer: a, now: t(Double(i)))
            if i % 7 == 0 { cache.remove("n\((i * 3) % 120).example") }
            if i % 5 == 0 { _ = cache.lookup("n\((i * 11) % 120).example", now: t(Double(i))) }
        }
        #expect(cache.count <= 50)
        #expect(cache.namesByRecency.count == cache.count)
        #expect(Set(cache.namesByRecency).count == cache.count)
        #expect(cache.entries.count <= 51, "freed slots are reused")
    }

    @Test func immutableEntriesAreServedForever() {
        var cache = Cache(configuration: .init(maxStale: .seconds(10), immutable: true))
        cache.store("a.example", answer: a, now: t(0))
        #expect(cache.lookup("a.example", now: t(86_400 * 30)) == .stale(a, age: .seconds(86_400 * 30 - 60)))
        // Negative answers still expire.
        let nx = ResolveFailure(kind: .nxdomain, message: "no such name")
        cache.storeNegative("nx.example", failure: nx, now: t(0))
        #expect(cache.lookup("nx.example", now: t(31)) == .miss)
    }

    @Test func namesAreNormalised() {
        var cache = Cache()
        cache.store("WWW.Example.COM.", answer: a, now: t(0))
        #expect(cache.lookup("www.example.com", now: t(1)) == .fresh(a, remaining: .seconds(59)))
        #expect(cache.lookup("www.example.com.", now: t(1)) == .fresh(a, remaining: .seconds(59)))
        #expect(cache.namesByRecency == ["www.example.com"])
        cache.remove("Www.Example.Com")
        #expect(cache.count == 0)
        #expect("already.normal".cacheKey == "already.normal")
        #expect("trailing..".cacheKey == "trailing")
    }

    @Test func removeAndRemoveAll() {
        var cache = Cache()
        cache.store("a.example", answer: a, now: t(0))
        cache.store("b.example", answer: a, now: t(0))
        cache.remove("a.example")
        #expect(cache.lookup("a.example", now: t(0)) == .miss)
        #expect(cache.count == 1)
        cache.removeAll()
        #expect(cache.count == 0)
        cache.store("c.example", answer: a, now: t(0))
        #expect(cache.namesByRecency == ["c.example"])
    }

    @Test func peekLeavesOrderAndHitsAlone() {
        var cache = Cache()
        cache.store("a.example", answer: a, now: t(0))
        cache.store("b.example", answer: a, now: t(0))
        #expect(cache.peek("a.example", now: t(1)) == .fresh(a, remaining: .seconds(59)))
        #expect(cache.namesByRecency == ["b.example", "a.example"])
        #expect(cache.snapshot(now: t(1)).map(\.hits) == [0, 0])
    }

    @Test func snapshotDescribesEachEntry() {
        var cache = Cache(configuration: .init(maxStale: .seconds(100)))
        let dual = ResolvedAnswer(ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: .seconds(10), serverIP: "203.0.113.9")
        cache.store("stale.example", answer: dual, now: t(0))
        cache.store("fresh.example", answer: a, now: t(0))
        cache.storeNegative("nx.example", failure: ResolveFailure(kind: .nxdomain, message: "x"), now: t(0))
        cache.store("gone.example", answer: answer("192.0.2.9", ttl: .seconds(1)), now: t(-200))
        _ = cache.lookup("fresh.example", now: t(1))
        _ = cache.lookup("fresh.example", now: t(2))

        let snapshot = cache.snapshot(now: t(15))
        #expect(snapshot.map(\.name) == ["fresh.example", "nx.example", "stale.example"])
        #expect(snapshot[0] == CacheEntrySnapshot(
            name: "fresh.example", ipv4: ["192.0.2.1"], ipv6: [], ttl: .seconds(60), remaining: .seconds(45),
            negative: nil, hits: 2, stale: false, refreshing: false, serverIP: "203.0.113.1"
        ))
        #expect(snapshot[1].negative == .nxdomain)
        #expect(snapshot[1].remaining == .seconds(15))
        #expect(snapshot[2].stale)
        #expect(snapshot[2].remaining == .seconds(-5))
        #expect(snapshot[2].ipv6 == ["2001:db8::1"])
        #expect(snapshot[2].serverIP == "203.0.113.9")
    }
}
