import ServiceLifecycle
import Testing

@testable import HTTPDNS

@Suite struct CachingResolverTests {
    @Test func concurrentCallersForAColdNameShareOneQuery() async throws {
        let harness = ResolverHarness()
        harness.upstream.stall()
        let results = try await harness.running {
            try await withThrowingTaskGroup(of: (ResolvedAnswer, AnswerSource).self) { group in
                for _ in 0..<100 {
                    group.addTask { try await harness.resolver.resolve("Cold.Example.") }
                }
                await harness.upstream.waitForCalls(1)
                await yieldUntil("all callers waiting") { harness.resolver.waiterCount("cold.example") == 100 }
                harness.upstream.release()
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(results.count == 100)
        #expect(results.allSatisfy { $0.0 == FakeUpstream.defaultAnswer(for: "cold.example", ttl: .seconds(60)) })
        #expect(results.allSatisfy { $0.1 == .query })
        #expect(harness.upstream.calls == ["cold.example"])
        #expect(harness.stats.totals().queries == 1)
    }

    @Test func answersAreCachedAfterTheQuery() async throws {
        let harness = ResolverHarness()
        harness.upstream.set("a.example", ipv4: "192.0.2.7", ttl: .seconds(30))
        try await harness.running {
            let first = try await harness.resolver.resolve("a.example")
            #expect(first.source == .query)
            harness.clock.advance(by: .seconds(10))
            let second = try await harness.resolver.resolve("a.example")
            #expect(second.source == .cache)
            #expect(second.answer.ipv4 == ["192.0.2.7"])
            #expect(harness.resolver.cached("a.example") == .fresh(second.answer, remaining: .seconds(20)))
        }
        #expect(harness.upstream.calls == ["a.example"])
    }

    /// Statistics read after hits, a purge and a new query count every hit exactly once.
    @Test func hitStatisticsAreExactAcrossPurges() async throws {
        let harness = ResolverHarness()
        harness.upstream.set("a.example", ipv4: "192.0.2.7", ttl: .seconds(30))
        try await harness.running {
            _ = try await harness.resolver.resolve("a.example")
            for _ in 0..<3 { #expect(harness.resolver.cached("a.example") != nil) }
            #expect(harness.stats.totals().cacheHits == 3)
            harness.resolver.purge("a.example")
            _ = try await harness.resolver.resolve("a.example")
            #expect(harness.resolver.cached("a.example") != nil)
        }
        let domain = harness.stats.snapshot().first { $0.name == "a.example" }
        #expect(domain?.cacheHits == 4)
        #expect(domain?.queries == 2)
        #expect(harness.stats.totals().cacheHits == 4)
    }

    @Test func aFailedQueryIsNotCached() async throws {
        let harness = ResolverHarness()
        harness.upstream.fail("down.example", .timeout)
        try await harness.running {
            await #expect(throws: ResolveFailure(kind: .timeout, message: "fake timeout")) {
                try await harness.resolver.resolve("down.example")
            }
            #expect(harness.resolver.cached("down.example") == nil)
            harness.upstream.set("down.example", ipv4: "192.0.2.8", ttl: .seconds(30))
            let retried = try await harness.resolver.resolve("down.example")
            #expect(retried.source == .query)
        }
        #expect(harness.upstream.calls == ["down.example", "down.example"])
    }

    @Test(arguments: [ResolveFailure.Kind.nxdomain, .noData])
    func nameErrorsAreCachedNegatively(kind: ResolveFailure.Kind) async throws {
        let harness = ResolverHarness()
        harness.upstream.fail("nx.example", kind, negativeTTL: .seconds(10))
        let failure = ResolveFailure(kind: kind, message: "fake \(kind.description)", negativeTTL: .seconds(10))
        try await harness.running {
            await #expect(throws: failure) { try await harness.resolver.resolve("nx.example") }
            await #expect(throws: failure) { try await harness.resolver.resolve("nx.example") }
            #expect(harness.resolver.cached("nx.example") == .negative(failure))
            #expect(harness.upstream.calls == ["nx.example"])
            harness.clock.advance(by: .seconds(10))
            await #expect(throws: failure) { try await harness.resolver.resolve("nx.example") }
            #expect(harness.upstream.calls == ["nx.example", "nx.example"])
        }
        #expect(harness.stats.snapshot().first?.negativeHits == 2)
    }

    @Test func staleAnswerIsServedWhenTheRefreshFails() async throws {
        var configuration = CachingResolverConfiguration()
        configuration.cache.refreshRetryInterval = .seconds(5)
        let harness = ResolverHarness(configuration)
        harness.upstream.set("a.example", ipv4: "192.0.2.1", ttl: .seconds(10))
        try await harness.running {
            _ = try await harness.resolver.resolve("a.example")
            harness.clock.advance(by: .seconds(15))
            harness.upstream.fail("a.example", .server)

            let stale = try await harness.resolver.resolve("a.example")
            #expect(stale.source == .stale)
            #expect(stale.answer.ipv4 == ["192.0.2.1"])
            await harness.upstream.waitForCalls(2)
            await yieldUntil("refresh failure recorded") { harness.stats.totals().errorsByKind["server"] == 1 }

            // Still the old answer, and no new query until the retry interval has passed.
            #expect(try await harness.resolver.resolve("a.example").source == .stale)
            #expect(harness.upstream.calls.count == 2)
            harness.clock.advance(by: .seconds(5))
            #expect(try await harness.resolver.resolve("a.example").answer.ipv4 == ["192.0.2.1"])
            await harness.upstream.waitForCalls(3)
        }
        #expect(harness.stats.snapshot().first?.staleHits == 3)
    }

    @Test func anAnswerPastMaxStaleIsNotServedWhenTheQueryFails() async throws {
        var configuration = CachingResolverConfiguration()
        configuration.cache.maxStale = .seconds(30)
        let harness = ResolverHarness(configuration)
        harness.upstream.set("a.example", ipv4: "192.0.2.1", ttl: .seconds(10))
        try await harness.running {
            _ = try await harness.resolver.resolve("a.example")
            harness.clock.advance(by: .seconds(40))
            harness.upstream.fail("a.example", .network)
            let error = await #expect(throws: ResolveFailure.self) { try await harness.resolver.resolve("a.example") }
            #expect(error?.kind == .network)
        }
        #expect(harness.upstream.calls.count == 2)
    }

    @Test func aStaleHitTriggersExactlyOneRefreshWhoseAnswerReplacesIt() async throws {
        let harness = ResolverHarness()
        harness.upstream.set("a.example", ipv4: "192.0.2.1", ttl: .seconds(10))
        try await harness.running {
            _ = try await harness.resolver.resolve("a.example")
            harness.clock.advance(by: .seconds(12))
            harness.upstream.stall()
            harness.upstream.set("a.example", ipv4: "192.0.2.2", ttl: .seconds(10))
            for _ in 0..<5 {
                guard case .stale(let old, age: .seconds(2)) = harness.resolver.cached("a.example") else {
                    Issue.record("expected a stale hit")
                    return
                }
                #expect(old.ipv4 == ["192.0.2.1"])
            }
            #expect(try await harness.resolver.resolve("a.example").source == .stale)
            await harness.upstream.waitForCalls(2)
            harness.upstream.release()
            await yieldUntil("refreshed") {
                if case .fresh(let new, _) = harness.resolver.cached("a.example") { return new.ipv4 == ["192.0.2.2"] }
                return false
            }
        }
        #expect(harness.upstream.calls == ["a.example", "a.example"])
    }

    @Test func keepaliveNamesAreRefreshedAtThreeQuartersOfTheirTTL() async throws {
        let harness = ResolverHarness(.init(keepaliveDomains: ["Keep.Example"]))
        harness.upstream.set("keep.example", ipv4: "192.0.2.1", ttl: .seconds(100))
        let clock = harness.clock
        try await harness.running {
            // Keepalive names are resolved at start, then the prefetch loop sleeps until 75 %.
            await harness.upstream.waitForCalls(1)
            await clock.waitForSleeper(until: clock.instant(.seconds(75)))
            clock.advance(by: .seconds(74))
            #expect(harness.upstream.calls.count == 1)
            clock.advance(by: .seconds(1))
            await harness.upstream.waitForCalls(2)
            // The next period starts from the refreshed answer.
            await clock.waitForSleeper(until: clock.instant(.seconds(150)))
            #expect(harness.resolver.cached("keep.example").map { if case .fresh = $0 { true } else { false } } == true)
        }
        #expect(harness.upstream.calls == ["keep.example", "keep.example"])
    }

    @Test func onlyHotNamesArePrefetched() async throws {
        let harness = ResolverHarness(.init(hotThreshold: 2))
        harness.upstream.set("hot.example", ipv4: "192.0.2.1", ttl: .seconds(100))
        harness.upstream.set("cold.example", ipv4: "192.0.2.2", ttl: .seconds(100))
        let clock = harness.clock
        try await harness.running {
            _ = try await harness.resolver.resolve("hot.example")
            _ = try await harness.resolver.resolve("cold.example")
            _ = harness.resolver.cached("hot.example")
            _ = harness.resolver.cached("hot.example")
            _ = harness.resolver.cached("cold.example")
            await clock.waitForSleeper(until: clock.instant(.seconds(75)))
            clock.advance(by: .seconds(75))
            await harness.upstream.waitForCalls(3)
            #expect(harness.upstream.callCount("hot.example") == 2)
            // The pass that picked "hot" would have marked "cold" too.
            #expect(harness.resolver.snapshot().first { $0.name == "cold.example" }?.refreshing == false)
            #expect(harness.upstream.callCount("cold.example") == 1)
        }
    }

    @Test func preloadUsesBatchQueriesOfAtMostBatchSize() async throws {
        let names = (1...12).map { "n\($0).example" }
        let harness = ResolverHarness(.init(preload: names, batchSize: 5), batch: true)
        try await harness.running {
            // Every preload name is claimed before the first batch goes out.
            await harness.upstream.waitForCalls(1)
            for name in names {
                // Joins the preload's batch when it is still under way.
                let resolved = try await harness.resolver.resolve(name)
                #expect(resolved.source != .stale)
            }
        }
        let batches = harness.upstream.batchCalls
        #expect(batches.count == 3)
        #expect(batches.allSatisfy { $0.count <= 5 })
        #expect(batches.flatMap { $0 }.sorted() == names.sorted())
        #expect(harness.upstream.calls.isEmpty)
        #expect(harness.stats.totals().queries == 12)
    }

    @Test func namesMissingFromABatchAnswerAreQueriedAlone() async throws {
        let upstream = FakeUpstream()
        let (logger, _) = RecordingLogHandler.logger()
        // A batch answer without "b" (the fake answers every name, so filter it).
        let resolver = CachingResolver(
            configuration: .init(preload: ["a.example", "b.example"]), clock: ManualClock(), query: upstream.query,
            batchQuery: { names in try await upstream.batchQuery(names).filter { $0.key != "b.example" } },
            stats: ResolverStats(), logger: logger
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await resolver.run() }
            await upstream.waitForCalls(1)
            let b = try await resolver.resolve("b.example")
            let a = try await resolver.resolve("a.example")
            #expect(b.source != .stale && a.source != .stale)
            group.cancelAll()
        }
        #expect(upstream.batchCalls == [["a.example", "b.example"]])
        #expect(upstream.calls == ["b.example"])
    }

    @Test func aCancelledCallerFailsAloneAndTheQueryCarriesOn() async throws {
        let harness = ResolverHarness()
        harness.upstream.stall()
        try await harness.running {
            let first = Task { try await harness.resolver.resolve("a.example") }
            let second = Task { try await harness.resolver.resolve("a.example") }
            await yieldUntil("both waiting") { harness.resolver.waiterCount("a.example") == 2 }
            first.cancel()
            await #expect(throws: ResolveFailure(kind: .cancelled, message: "caller cancelled")) { try await first.value }
            harness.upstream.release()
            let shared = try await second.value
            #expect(shared.source == .query)
            let again = try await harness.resolver.resolve("a.example")
            #expect(again.source == .cache)
        }
        #expect(harness.upstream.calls == ["a.example"])
    }

    @Test func stoppingFailsWaitingCallersWithCancelled() async throws {
        let harness = ResolverHarness()
        harness.upstream.stall()
        let run = Task { try await harness.resolver.run() }
        let caller = Task { try await harness.resolver.resolve("a.example") }
        await yieldUntil("caller waiting") { harness.resolver.waiterCount("a.example") == 1 }
        run.cancel()
        try await run.value
        let error = await #expect(throws: ResolveFailure.self) { try await caller.value }
        #expect(error?.kind == .cancelled)
        await #expect(throws: ResolveFailure.resolverStopped) { try await harness.resolver.resolve("b.example") }
    }

    @Test func gracefulShutdownStopsTheResolver() async throws {
        let harness = ResolverHarness()
        harness.upstream.stall()
        let (logger, _) = RecordingLogHandler.logger()
        let serviceGroup = ServiceGroup(services: [harness.resolver], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await serviceGroup.run() }
            let caller = Task { try await harness.resolver.resolve("a.example") }
            await yieldUntil("caller waiting") { harness.resolver.waiterCount("a.example") == 1 }
            await serviceGroup.triggerGracefulShutdown()
            let error = await #expect(throws: ResolveFailure.self) { try await caller.value }
            #expect(error?.kind == .cancelled)
            try await tasks.waitForAll()
        }
    }

    @Test func purgeForgetsOneNameOrAll() async throws {
        let harness = ResolverHarness()
        try await harness.running {
            _ = try await harness.resolver.resolve("a.example")
            _ = try await harness.resolver.resolve("b.example")
            harness.resolver.purge("A.example")
            #expect(harness.resolver.snapshot().map(\.name) == ["b.example"])
            harness.resolver.purge(nil)
            #expect(harness.resolver.snapshot().isEmpty)
            let again = try await harness.resolver.resolve("a.example")
            #expect(again.source == .query)
        }
    }

    @Test func purgedKeepaliveNamesAreResolvedAgain() async throws {
        let harness = ResolverHarness(.init(keepaliveDomains: ["k.example"]))
        try await harness.running {
            await harness.upstream.waitForCalls(1)
            _ = try await harness.resolver.resolve("k.example")
            harness.resolver.purge(nil)
            await harness.upstream.waitForCalls(2)
            let refreshed = try await harness.resolver.resolve("k.example")
            #expect(refreshed.source != .stale)
        }
        #expect(harness.upstream.calls == ["k.example", "k.example"])
    }

    @Test func statisticsCountHitsQueriesAndRoundTrips() async throws {
        // Not hot, so only the stale hit refreshes "a".
        let harness = ResolverHarness(.init(hotThreshold: 100))
        harness.upstream.set("a.example", ipv4: "192.0.2.1", ttl: .seconds(10))
        harness.upstream.fail("t.example", .timeout)
        try await harness.running {
            harness.upstream.stall()
            let pending = Task { try await harness.resolver.resolve("a.example") }
            await harness.upstream.waitForCalls(1)
            harness.clock.advance(by: .milliseconds(250))
            harness.upstream.release()
            _ = try await pending.value
            _ = harness.resolver.cached("a.example")
            _ = harness.resolver.cached("a.example")
            harness.clock.advance(by: .seconds(10))
            _ = harness.resolver.cached("a.example")
            await harness.upstream.waitForCalls(2)
            await #expect(throws: ResolveFailure.self) { try await harness.resolver.resolve("t.example") }
            await yieldUntil("refresh counted") { harness.stats.totals().queries == 3 }
        }
        let domains = Dictionary(uniqueKeysWithValues: harness.stats.snapshot().map { ($0.name, $0) })
        let a = try #require(domains["a.example"])
        #expect(a.queries == 2)
        #expect(a.successes == 2)
        #expect(a.cacheHits == 2)
        #expect(a.staleHits == 1)
        #expect(a.maxResolveMs == 250)
        #expect(a.avgResolveMs == 125)
        let t = try #require(domains["t.example"])
        #expect(t.queries == 1)
        #expect(t.timeouts == 1)
        #expect(t.errorsByKind == ["timeout": 1])
        #expect(harness.stats.totals().queries == 3)
    }
}
