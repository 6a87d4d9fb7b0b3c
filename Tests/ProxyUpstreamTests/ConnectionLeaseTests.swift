import HTTPDNS
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import ProxyUpstream

/// Pooled connections follow the resolver's answers: a connection is reused without asking only
/// until its lease ends, then the resolver renews the lease (address still current) or the pool
/// retires the connection. Time is the embedded loop's virtual clock.
@Suite struct ConnectionLeaseTests {
    private let key = PoolKey(host: "origin.test", port: 80, tls: false)

    /// Answers like a cache holding one answer per host that lasts `ttl` from when it is set.
    final class FakeAnswers: LeaseRenewing, @unchecked Sendable {
        private let state = NIOLockedValueBox<(answers: [String: (ips: [String], until: NIODeadline)], asked: Int)>(([:], 0))
        func set(_ host: String, _ ips: [String], until: NIODeadline) {
            state.withLockedValue { $0.answers[host] = (ips, until) }
        }
        var asked: Int { state.withLockedValue { $0.asked } }
        func renewLease(host: String, ip: String, source: ResolutionSource, now: NIODeadline) -> ConnectionLease.Verdict {
            state.withLockedValue { state in
                state.asked += 1
                guard let answer = state.answers[host], now < answer.until else { return .retire(reason: "no current answer") }
                return answer.ips.contains(ip) ? .renew(until: answer.until) : .retire(reason: "dropped")
            }
        }
    }

    private func makePool(_ answers: FakeAnswers) -> (EmbeddedEventLoop, UpstreamPool) {
        let loop = EmbeddedEventLoop()
        return (loop, UpstreamPool(eventLoop: loop, maxIdlePerOrigin: 4, idleTimeout: .seconds(300), leases: answers))
    }

    private func connection(
        on loop: EmbeddedEventLoop, ip: String, source: ResolutionSource = .httpdns
    ) async throws -> (UpstreamHTTPConnection, EmbeddedChannel) {
        let handler = UpstreamHTTPConnection(key: key)
        let channel = EmbeddedChannel(handler: handler, loop: loop)
        let address = try SocketAddress(ipAddress: ip, port: 80)
        try await channel.connect(to: address).get()
        handler.dialedAddress = address
        handler.lease = ConnectionLease(source: source, dialedAt: loop.now)
        return (handler, channel)
    }

    /// Steady traffic: the connection goes back and forth between the pool and an exchange every
    /// 200 ms, so the idle timeout never fires. The answer changes at 5 s (its TTL); the first
    /// reuse after that closes the old connection instead of riding it.
    @Test func aBusyConnectionIsRetiredWhenItsAnswerDropsItsAddress() async throws {
        let answers = FakeAnswers()
        let (loop, pool) = makePool(answers)
        answers.set("origin.test", ["192.0.2.1"], until: loop.now + .seconds(5))
        let (old, oldChannel) = try await connection(on: loop, ip: "192.0.2.1")
        pool.put(old)
        #expect(answers.asked == 1, "a new connection's lease is checked on its first return")
        var reuses = 0
        while let taken = pool.take(key) {
            #expect(taken === old)
            reuses += 1
            loop.advanceTime(by: .milliseconds(200))
            if loop.now >= .uptimeNanoseconds(0) + .seconds(5) {
                answers.set("origin.test", ["192.0.2.2"], until: loop.now + .seconds(10))
            }
            pool.put(taken)
            if reuses > 100 { break }
        }
        #expect(reuses < 30, "kept reusing the old address for \(reuses) requests")
        #expect(!oldChannel.isActive, "the retired connection is closed")
        #expect(pool.idleCount == 0)
        // One lookup per lease (5 s), not one per request.
        #expect(answers.asked <= 3, "asked the resolver \(answers.asked) times for \(reuses) reuses")
    }

    @Test func aConnectionWhoseAddressIsStillCurrentIsRenewedNotClosed() async throws {
        let answers = FakeAnswers()
        let (loop, pool) = makePool(answers)
        answers.set("origin.test", ["192.0.2.1", "192.0.2.2"], until: loop.now + .seconds(5))
        let (connection, channel) = try await connection(on: loop, ip: "192.0.2.2")
        pool.put(connection)
        loop.advanceTime(by: .seconds(6))
        // The answer was refreshed with the same addresses.
        answers.set("origin.test", ["192.0.2.2", "192.0.2.1"], until: loop.now + .seconds(5))
        #expect(pool.take(key) === connection)
        #expect(channel.isActive)
        pool.put(connection)
        loop.advanceTime(by: .seconds(4))
        let asked = answers.asked
        #expect(pool.take(key) === connection)
        #expect(answers.asked == asked, "renewed within the new answer's lifetime")
    }

    /// An idle connection whose answer changed meanwhile is closed when a request would take it.
    @Test func anIdleConnectionToADroppedAddressIsClosedOnTake() async throws {
        let answers = FakeAnswers()
        let (loop, pool) = makePool(answers)
        answers.set("origin.test", ["192.0.2.1"], until: loop.now + .seconds(5))
        let (connection, channel) = try await connection(on: loop, ip: "192.0.2.1")
        pool.put(connection)
        loop.advanceTime(by: .seconds(5))
        answers.set("origin.test", ["192.0.2.9"], until: loop.now + .seconds(5))
        #expect(pool.take(key) == nil)
        #expect(!channel.isActive)
    }

    @Test func aConnectionReturnedAfterItsAddressWasDroppedIsNotPooled() async throws {
        let answers = FakeAnswers()
        let (loop, pool) = makePool(answers)
        answers.set("origin.test", ["192.0.2.1"], until: loop.now + .seconds(5))
        let (connection, channel) = try await connection(on: loop, ip: "192.0.2.1")
        pool.put(connection)
        #expect(pool.take(key) === connection)
        loop.advanceTime(by: .seconds(7))
        answers.set("origin.test", ["192.0.2.9"], until: loop.now + .seconds(5))
        pool.put(connection)
        #expect(!channel.isActive)
        #expect(pool.idleCount == 0)
    }

    @Test func literalAddressesNeverExpireAndSystemAnswersLastThirtySeconds() throws {
        let answers = FakeAnswers()
        let (loop, _) = makePool(answers)
        #expect(ConnectionLease(source: .literal, dialedAt: loop.now).isCurrent(at: .distantFuture - .nanoseconds(1)))
        let system = ConnectionLease(source: .system, dialedAt: loop.now)
        #expect(system.isCurrent(at: loop.now + .seconds(30) - .nanoseconds(1)))
        #expect(!system.isCurrent(at: loop.now + .seconds(30)))
        #expect(!ConnectionLease(source: .fallback, dialedAt: loop.now).isCurrent(at: loop.now + .seconds(30)))
        #expect(!ConnectionLease(source: .cache, dialedAt: loop.now).isCurrent(at: loop.now), "without a known lifetime: checked on first reuse")
        let fresh = ConnectionLease(source: .httpdns, dialedAt: loop.now, lifetime: .seconds(5))
        #expect(fresh.isCurrent(at: loop.now + .seconds(5) - .nanoseconds(1)), "an answer's remaining TTL is the first lease")
        #expect(!fresh.isCurrent(at: loop.now + .seconds(5)))
        #expect(!ConnectionLease(source: .stale, dialedAt: loop.now, lifetime: .zero).isCurrent(at: loop.now))
    }
}

/// The HTTPDNS resolver's side of a lease: the cache's current answer decides.
@Suite struct HTTPDNSLeaseRenewalTests {
    final class Answers: @unchecked Sendable {
        let ips = NIOLockedValueBox<[String: [String]]>([:])
    }

    private func withResolver(_ answers: Answers, _ body: (HTTPDNSUpstreamResolver) async throws -> Void) async throws {
        let caching = CachingResolver(
            configuration: .init(), clock: ContinuousClock(),
            query: { host in
                guard let ips = answers.ips.withLockedValue({ $0[host] }) else {
                    throw ResolveFailure(kind: .nxdomain, message: "no such name")
                }
                return ResolvedAnswer(ipv4: ips.filter { !$0.contains(":") }, ipv6: ips.filter { $0.contains(":") }, ttl: .seconds(60))
            },
            stats: ResolverStats(), logger: Logger(label: "test")
        )
        let resolver = HTTPDNSUpstreamResolver(caching: caching, system: nil, stats: ResolverStats(), logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await caching.run() }
            try await body(resolver)
            tasks.cancelAll()
        }
    }

    @Test func renewsWhileTheCachedAnswerListsTheAddressUntilItExpires() async throws {
        let answers = Answers()
        answers.ips.withLockedValue { $0["origin.test"] = ["192.0.2.1", "2001:db8::1"] }
        try await withResolver(answers) { resolver in
            _ = try await resolver.caching.resolve("origin.test")
            let now = NIODeadline.now()
            guard case .renew(let until) = resolver.renewLease(host: "origin.test", ip: "192.0.2.1", source: .cache, now: now) else {
                Issue.record("not renewed")
                return
            }
            #expect(until > now + .seconds(55) && until <= now + .seconds(60))
            // Another spelling of the same IPv6 address.
            guard case .renew = resolver.renewLease(host: "origin.test", ip: "2001:0db8:0:0::1", source: .httpdns, now: now) else {
                Issue.record("an IPv6 spelling was not recognised")
                return
            }
            #expect(resolver.renewLease(host: "origin.test", ip: "192.0.2.7", source: .httpdns, now: now)
                == .retire(reason: "address no longer in the HTTPDNS answer"))
            #expect(resolver.renewLease(host: "other.test", ip: "192.0.2.1", source: .httpdns, now: now)
                == .retire(reason: "answer no longer cached"))
            #expect(resolver.renewLease(host: "origin.test", ip: "192.0.2.1", source: .fallback, now: now)
                == .retire(reason: "system DNS answer older than 30 s"))
            #expect(resolver.renewLease(host: "192.0.2.1", ip: "192.0.2.1", source: .literal, now: now) == .renew(until: .distantFuture))
        }
    }

    @Test func aPurgedAnswerRetiresItsConnections() async throws {
        let answers = Answers()
        answers.ips.withLockedValue { $0["origin.test"] = ["192.0.2.1"] }
        try await withResolver(answers) { resolver in
            _ = try await resolver.caching.resolve("origin.test")
            resolver.caching.purge("origin.test")
            #expect(resolver.renewLease(host: "origin.test", ip: "192.0.2.1", source: .cache, now: .now())
                == .retire(reason: "answer no longer cached"))
        }
    }
}
