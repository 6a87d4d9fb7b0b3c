import Testing

@testable import HTTPDNS

@Suite struct ResolverStatsTests {
    let ok = Result<ResolvedAnswer, ResolveFailure>.success(answer("192.0.2.1", ttl: .seconds(60)))

    func failure(_ kind: ResolveFailure.Kind) -> Result<ResolvedAnswer, ResolveFailure> {
        .failure(ResolveFailure(kind: kind, message: "x"))
    }

    @Test func countsPerDomain() throws {
        let stats = ResolverStats()
        stats.recordCacheHit("a.example")
        stats.recordCacheHit("A.Example.")
        stats.recordStaleHit("a.example")
        stats.recordNegativeHit("a.example")
        stats.recordQuery("a.example", rtt: .milliseconds(100), result: ok)
        stats.recordQuery("a.example", rtt: .milliseconds(300), result: failure(.timeout))
        stats.recordQuery("a.example", rtt: .milliseconds(50), result: failure(.server))
        stats.recordFallback("a.example")
        stats.recordCacheHit("b.example")

        let snapshot = stats.snapshot()
        #expect(snapshot.map(\.name) == ["a.example", "b.example"])
        let a = snapshot[0]
        #expect(a.cacheHits == 2)
        #expect(a.staleHits == 1)
        #expect(a.negativeHits == 1)
        #expect(a.queries == 3)
        #expect(a.successes == 1)
        #expect(a.timeouts == 1)
        #expect(a.errorsByKind == ["timeout": 1, "server": 1])
        #expect(a.fallbacksToSystem == 1)
        #expect(a.avgResolveMs == 150)
        #expect(a.maxResolveMs == 300)

        let totals = stats.totals()
        #expect(totals.name == ResolverStats.totalName)
        #expect(totals.cacheHits == 3)
        #expect(totals.queries == 3)

        stats.reset()
        #expect(stats.snapshot().isEmpty)
        #expect(stats.totals().cacheHits == 0)
    }

    @Test func domainsBeyondTheCapShareOneBucket() {
        let stats = ResolverStats(maxDomains: 2)
        for name in ["a.example", "b.example", "c.example", "d.example", "c.example"] {
            stats.recordCacheHit(name)
        }
        stats.recordQuery("e.example", rtt: .milliseconds(20), result: failure(.nxdomain))
        stats.recordCacheHit("a.example")

        let snapshot = stats.snapshot()
        #expect(snapshot.map(\.name) == ["a.example", "b.example", ResolverStats.otherBucket])
        #expect(snapshot[0].cacheHits == 2)
        #expect(snapshot[2].cacheHits == 3)
        #expect(snapshot[2].errorsByKind == ["nxdomain": 1])
        #expect(stats.totals().cacheHits == 6)
    }

    @Test func snapshotsEncodeAsJSON() throws {
        let stats = ResolverStats()
        stats.recordQuery("a.example", rtt: .milliseconds(12), result: ok)
        let domain = try #require(stats.snapshot().first)
        let decoded = try JSONRoundTrip.roundTrip(domain)
        #expect(decoded == domain)
    }
}
