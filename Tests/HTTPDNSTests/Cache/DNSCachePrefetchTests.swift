import Testing

@testable import HTTPDNS

/// Which names the cache asks to refresh, and when.
@Suite struct DNSCachePrefetchTests {
    typealias Cache = DNSCache<ManualClock.Instant>

    func t(_ seconds: Double) -> ManualClock.Instant { ManualClock.Instant(offset: .seconds(seconds)) }

    let a = answer("192.0.2.1", ttl: .seconds(100))

    @Test func keepaliveNamesAreDueAtThreeQuartersOfTheirTTL() {
        var cache = Cache()
        cache.store("keep.example", answer: a, now: t(0))
        cache.store("other.example", answer: a, now: t(0))
        let keepalive: Set = ["keep.example"]
        #expect(cache.nextPrefetchDeadline(now: t(0), keepalive: keepalive, hotThreshold: 2) == t(75))
        #expect(cache.namesDueForPrefetch(now: t(74.9), keepalive: keepalive, hotThreshold: 2) == [])
        #expect(cache.namesDueForPrefetch(now: t(75), keepalive: keepalive, hotThreshold: 2) == ["keep.example"])
        // Marked refreshing: not handed out twice, and no longer a deadline.
        #expect(cache.namesDueForPrefetch(now: t(80), keepalive: keepalive, hotThreshold: 2) == [])
        #expect(cache.nextPrefetchDeadline(now: t(80), keepalive: keepalive, hotThreshold: 2) == nil)
        #expect(cache.snapshot(now: t(80)).first { $0.name == "keep.example" }?.refreshing == true)
        // The refreshed answer starts a new period.
        cache.store("keep.example", answer: a, now: t(81))
        #expect(cache.nextPrefetchDeadline(now: t(81), keepalive: keepalive, hotThreshold: 2) == t(156))
    }

    @Test func onlyHotNamesArePrefetched() {
        var cache = Cache()
        cache.store("hot.example", answer: a, now: t(0))
        cache.store("warm.example", answer: a, now: t(0))
        cache.store("cold.example", answer: a, now: t(0))
        _ = cache.lookup("hot.example", now: t(1))
        _ = cache.lookup("hot.example", now: t(2))
        _ = cache.lookup("warm.example", now: t(3))
        #expect(cache.nextPrefetchDeadline(now: t(3), keepalive: [], hotThreshold: 2) == t(75))
        #expect(cache.namesDueForPrefetch(now: t(75), keepalive: [], hotThreshold: 2) == ["hot.example"])
        // Hits count per TTL: the new answer must earn "hot" again.
        cache.store("hot.example", answer: a, now: t(76))
        #expect(cache.namesDueForPrefetch(now: t(200), keepalive: [], hotThreshold: 2) == [])
        #expect(cache.nextPrefetchDeadline(now: t(200), keepalive: [], hotThreshold: 2) == nil)
    }

    @Test func aNameTurningHotLateIsDueImmediately() {
        var cache = Cache()
        cache.store("late.example", answer: a, now: t(0))
        _ = cache.lookup("late.example", now: t(80))
        _ = cache.lookup("late.example", now: t(81))
        #expect(cache.nextPrefetchDeadline(now: t(81), keepalive: [], hotThreshold: 2) == t(75))
        #expect(cache.namesDueForPrefetch(now: t(81), keepalive: [], hotThreshold: 2) == ["late.example"])
    }

    @Test func negativeAndZeroTTLEntriesAreNeverPrefetched() {
        var cache = Cache()
        cache.storeNegative("nx.example", failure: ResolveFailure(kind: .nxdomain, message: "x"), now: t(0))
        cache.store("zero.example", answer: answer("192.0.2.2", ttl: .zero), now: t(0))
        let keepalive: Set = ["nx.example", "zero.example"]
        #expect(cache.namesDueForPrefetch(now: t(10), keepalive: keepalive, hotThreshold: 0) == [])
        #expect(cache.nextPrefetchDeadline(now: t(10), keepalive: keepalive, hotThreshold: 0) == nil)
    }

    @Test func aFailedRefreshIsRetriedAfterTheRetryInterval() {
        var cache = Cache(configuration: .init(refreshRetryInterval: .seconds(5)))
        cache.store("keep.example", answer: a, now: t(0))
        let keepalive: Set = ["keep.example"]
        #expect(cache.namesDueForPrefetch(now: t(75), keepalive: keepalive, hotThreshold: 2) == ["keep.example"])
        cache.refreshFailed("keep.example", now: t(76))
        #expect(cache.nextPrefetchDeadline(now: t(76), keepalive: keepalive, hotThreshold: 2) == t(81))
        #expect(cache.namesDueForPrefetch(now: t(80), keepalive: keepalive, hotThreshold: 2) == [])
        #expect(cache.namesDueForPrefetch(now: t(81), keepalive: keepalive, hotThreshold: 2) == ["keep.example"])
    }

    @Test func staleRefreshesAreClaimedOnce() {
        var cache = Cache(configuration: .init(refreshRetryInterval: .seconds(5)))
        cache.store("a.example", answer: a, now: t(0))
        let first = cache.beginRefresh("a.example", now: t(101))
        let again = cache.beginRefresh("a.example", now: t(102))
        #expect(first && !again)
        cache.refreshFailed("a.example", now: t(103))
        let tooSoon = cache.beginRefresh("a.example", now: t(107))
        let afterRetryInterval = cache.beginRefresh("a.example", now: t(108))
        #expect(!tooSoon && afterRetryInterval)
        let missing = cache.beginRefresh("missing.example", now: t(108))
        #expect(!missing)
    }

    @Test func hotNamesGoColdAfterTheStaleWindowButKeepaliveNamesDoNot() {
        var cache = Cache(configuration: .init(maxStale: .seconds(50)))
        cache.store("hot.example", answer: a, now: t(0))
        cache.store("keep.example", answer: a, now: t(0))
        _ = cache.lookup("hot.example", now: t(1))
        _ = cache.lookup("hot.example", now: t(2))
        #expect(cache.namesDueForPrefetch(now: t(150), keepalive: ["keep.example"], hotThreshold: 2) == ["keep.example"])
    }
}
