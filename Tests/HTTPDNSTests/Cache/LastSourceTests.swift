import Testing

@testable import HTTPDNS

/// `DomainStats.lastSource`: where the latest answer for a name came from (admin page column).
@Suite struct LastSourceTests {
    @Test func followsTheLatestKindOfAnswer() {
        let stats = ResolverStats()
        #expect(stats.snapshot().isEmpty)
        let ok = Result<ResolvedAnswer, ResolveFailure>.success(answer("192.0.2.1", ttl: .seconds(60)))
        stats.recordQuery("a.example", rtt: .milliseconds(5), result: ok)
        #expect(stats.snapshot().first?.lastSource == "httpdns")
        stats.recordCacheHit("a.example")
        #expect(stats.snapshot().first?.lastSource == "cache")
        stats.recordStaleHit("a.example")
        #expect(stats.snapshot().first?.lastSource == "stale")
        stats.recordFallback("A.Example.")
        #expect(stats.snapshot().first?.lastSource == "system")
        // A failed query or a negative hit gave no answer: the last answer's source stays.
        stats.recordQuery("a.example", rtt: .milliseconds(5), result: .failure(ResolveFailure(kind: .timeout, message: "x")))
        stats.recordNegativeHit("a.example")
        #expect(stats.snapshot().first?.lastSource == "system")
    }

    /// Hits are reported in batches; those of a name still pending when it is queried again must
    /// not make the query look older than them.
    @Test func aQueryAfterPendingHitsIsTheLastSource() async throws {
        // No hot-name prefetch: three hits would make the name hot, and a background refresh
        // racing the purge could answer the second resolve from the cache.
        let harness = ResolverHarness(.init(hotThreshold: 1_000))
        harness.upstream.set("a.example", ipv4: "192.0.2.7", ttl: .seconds(30))
        try await harness.running {
            _ = try await harness.resolver.resolve("a.example")
            for _ in 0..<3 { #expect(harness.resolver.cached("a.example") != nil) }
            harness.clock.advance(by: .seconds(31))
            harness.resolver.purge("a.example")
            let again = try await harness.resolver.resolve("a.example")
            #expect(again.source == .query)
        }
        let domain = try #require(harness.stats.snapshot().first { $0.name == "a.example" })
        #expect(domain.cacheHits == 3)
        #expect(domain.queries == 2)
        #expect(domain.lastSource == "httpdns")
    }
}
