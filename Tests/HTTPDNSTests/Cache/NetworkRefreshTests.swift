import Testing

@testable import HTTPDNS

/// After a network change every cached name is refreshed once, spread over time, while the old
/// answers keep being served (the cache is never wiped).
@Suite(.timeLimit(.minutes(1))) struct NetworkRefreshTests {
    typealias Cache = DNSCache<ManualClock.Instant>

    func t(_ seconds: Double) -> ManualClock.Instant { ManualClock.Instant(offset: .seconds(seconds)) }

    @Test func everyServableAnswerIsDueOnceSpreadByGroups() {
        var cache = Cache(configuration: .init(maxStale: .seconds(50)))
        cache.store("c.example", answer: answer("192.0.2.3", ttl: .seconds(100)), now: t(0))
        cache.store("b.example", answer: answer("192.0.2.2", ttl: .seconds(100)), now: t(0))
        cache.store("a.example", answer: answer("192.0.2.1", ttl: .seconds(100)), now: t(0))
        cache.store("gone.example", answer: answer("192.0.2.9", ttl: .seconds(1)), now: t(0))  // beyond stale at t(60)
        cache.storeNegative("nx.example", failure: ResolveFailure(kind: .nxdomain, message: "nx"), now: t(0))

        #expect(cache.scheduleRefreshOfAll(now: t(60), groupSize: 2, spacing: .seconds(1)) == 3)
        // Most recently used first: a and b at once, c one spacing later; nobody is hot.
        #expect(cache.nextPrefetchDeadline(now: t(60), keepalive: [], hotThreshold: 2) == t(60))
        #expect(cache.namesDueForPrefetch(now: t(60), keepalive: [], hotThreshold: 2) == ["a.example", "b.example"])
        #expect(cache.nextPrefetchDeadline(now: t(60), keepalive: [], hotThreshold: 2) == t(61))
        #expect(cache.namesDueForPrefetch(now: t(60.9), keepalive: [], hotThreshold: 2) == [])
        #expect(cache.namesDueForPrefetch(now: t(61), keepalive: [], hotThreshold: 2) == ["c.example"])
        // Still served meanwhile.
        #expect(cache.peek("c.example", now: t(61)) == .fresh(answer("192.0.2.3", ttl: .seconds(100)), remaining: .seconds(39)))
        // An answer ends the one-off refresh; the name is not due again.
        cache.store("a.example", answer: answer("198.51.100.1", ttl: .seconds(100)), now: t(62))
        #expect(cache.namesDueForPrefetch(now: t(200), keepalive: [], hotThreshold: 2).contains("a.example") == false)
    }

    @Test func aFailedRefreshIsNotRetriedForEveryName() {
        var cache = Cache()
        cache.store("a.example", answer: answer("192.0.2.1", ttl: .seconds(100)), now: t(0))
        #expect(cache.scheduleRefreshOfAll(now: t(10), groupSize: 1, spacing: .seconds(1)) == 1)
        #expect(cache.namesDueForPrefetch(now: t(10), keepalive: [], hotThreshold: 2) == ["a.example"])
        cache.refreshFailed("a.example", now: t(11))
        #expect(cache.nextPrefetchDeadline(now: t(11), keepalive: [], hotThreshold: 2) == nil)
        #expect(cache.peek("a.example", now: t(11)) == .fresh(answer("192.0.2.1", ttl: .seconds(100)), remaining: .seconds(89)))
    }

    @Test func aRefreshAlreadyRunningAtTheChangeDoesNotCountForIt() {
        var cache = Cache()
        cache.store("a.example", answer: answer("192.0.2.1", ttl: .seconds(100)), now: t(0))
        cache.store("b.example", answer: answer("192.0.2.2", ttl: .seconds(100)), now: t(0))
        let beganA = cache.beginRefresh("a.example", now: t(5))  // over the old network
        let beganB = cache.beginRefresh("b.example", now: t(5))
        #expect(beganA && beganB)
        #expect(cache.scheduleRefreshOfAll(now: t(10), groupSize: 2, spacing: .seconds(1)) == 2)
        // a's old-path answer lands, b's old-path refresh fails: both are still due once.
        cache.store("a.example", answer: answer("192.0.2.7", ttl: .seconds(100)), now: t(11))
        cache.refreshFailed("b.example", now: t(11))
        #expect(cache.namesDueForPrefetch(now: t(11), keepalive: [], hotThreshold: 2).contains("a.example"))
        #expect(cache.nextPrefetchDeadline(now: t(11), keepalive: [], hotThreshold: 2) != nil)
        // The refresh that follows is the one for the new network: its answer ends it.
        cache.store("a.example", answer: answer("198.51.100.1", ttl: .seconds(100)), now: t(12))
        #expect(cache.namesDueForPrefetch(now: t(13), keepalive: [], hotThreshold: 2).contains("a.example") == false)
    }

    @Test func theResolverRefreshesAtABoundedRateAndServesOldAnswersMeanwhile() async throws {
        var configuration = CachingResolverConfiguration()
        configuration.networkRefreshSpacing = .milliseconds(100)
        let harness = ResolverHarness(configuration)
        for (index, name) in ["a.example", "b.example", "c.example"].enumerated() {
            harness.upstream.set(name, ipv4: "192.0.2.\(index + 1)", ttl: .seconds(300))
        }
        let clock = harness.clock
        try await harness.running {
            for name in ["c.example", "b.example", "a.example"] { _ = try await harness.resolver.resolve(name) }
            #expect(harness.upstream.calls.count == 3)
            // The new network's service gives other answers.
            for (index, name) in ["a.example", "b.example", "c.example"].enumerated() {
                harness.upstream.set(name, ipv4: "198.51.100.\(index + 1)", ttl: .seconds(300))
            }
            harness.upstream.stall()
            #expect(harness.resolver.refreshAllInBackground() == 3)
            await harness.upstream.waitForCalls(4)
            #expect(harness.upstream.calls.last == "a.example", "the most recently used name first")
            // The next one waits for its turn; every old answer is still served.
            await clock.waitForSleeper(until: clock.instant(.milliseconds(100)))
            #expect(harness.upstream.calls.count == 4)
            for (index, name) in ["a.example", "b.example", "c.example"].enumerated() {
                let hit = harness.resolver.cached(name)
                #expect(hit == .fresh(answer("192.0.2.\(index + 1)", ttl: .seconds(300)), remaining: .seconds(300)), "\(name)")
            }
            harness.upstream.release()
            clock.advance(by: .milliseconds(100))
            await harness.upstream.waitForCalls(5)
            clock.advance(by: .milliseconds(100))
            await harness.upstream.waitForCalls(6)
            await yieldUntil("every refresh stored") {
                ["a.example", "b.example", "c.example"].enumerated().allSatisfy { index, name in
                    harness.resolver.snapshot().first { $0.name == name }?.ipv4 == ["198.51.100.\(index + 1)"]
                }
            }
        }
        #expect(harness.upstream.calls.count == 6, "one refresh per cached name: \(harness.upstream.calls)")
        #expect(harness.upstream.calls.suffix(3) == ["a.example", "b.example", "c.example"])
    }
}
