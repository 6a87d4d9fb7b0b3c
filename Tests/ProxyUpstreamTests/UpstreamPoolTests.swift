import NIOCore
import NIOEmbedded
import Testing

@testable import ProxyUpstream

/// The per-loop upstream pool: LIFO reuse, the per-origin limit, and the idle timeout, driven by the
/// embedded loop's virtual clock.
@Suite struct UpstreamPoolTests {
    private let key = PoolKey(host: "origin.test", port: 80, tls: false)

    /// A pool on an embedded loop whose clock the test moves; 30 s idle timeout.
    private func makePool(maxIdle: Int = 4) -> (EmbeddedEventLoop, UpstreamPool) {
        let loop = EmbeddedEventLoop()
        return (loop, UpstreamPool(eventLoop: loop, maxIdlePerOrigin: maxIdle, idleTimeout: .seconds(30)))
    }

    private func connection(on loop: EmbeddedEventLoop, key: PoolKey? = nil) async throws -> (UpstreamHTTPConnection, EmbeddedChannel) {
        let handler = UpstreamHTTPConnection(key: key ?? self.key)
        let channel = EmbeddedChannel(handler: handler, loop: loop)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        return (handler, channel)
    }

    @Test func takesTheMostRecentlyReturnedConnection() async throws {
        let (loop, pool) = makePool()
        let (first, _) = try await connection(on: loop)
        let (second, _) = try await connection(on: loop)
        pool.put(first)
        pool.put(second)
        #expect(pool.idleCount == 2)
        #expect(pool.take(key) === second)
        #expect(pool.take(key) === first)
        #expect(pool.take(key) == nil)
        #expect(pool.take(PoolKey(host: "other.test", port: 80, tls: false)) == nil)
    }

    @Test func closesWhatDoesNotFitTheOriginsIdleSlots() async throws {
        let (loop, pool) = makePool(maxIdle: 1)
        let (kept, keptChannel) = try await connection(on: loop)
        let (extra, extraChannel) = try await connection(on: loop)
        pool.put(kept)
        pool.put(extra)
        #expect(pool.idleCount == 1)
        #expect(keptChannel.isActive)
        #expect(!extraChannel.isActive)
    }

    @Test func closesConnectionsIdleForTheTimeoutAndOnlyThose() async throws {
        let (loop, pool) = makePool()
        let (old, oldChannel) = try await connection(on: loop)
        let (fresh, freshChannel) = try await connection(on: loop)
        pool.put(old)
        loop.advanceTime(by: .seconds(20))
        pool.put(fresh)
        loop.advanceTime(by: .seconds(10) - .nanoseconds(1))
        #expect(oldChannel.isActive, "closed before its idle timeout")
        loop.advanceTime(by: .nanoseconds(1))
        #expect(!oldChannel.isActive, "kept past its idle timeout")
        #expect(freshChannel.isActive)
        #expect(pool.idleCount == 1)
        loop.advanceTime(by: .seconds(20))
        #expect(!freshChannel.isActive)
        #expect(pool.idleCount == 0)
    }

    /// A connection taken and returned is idle from its return, not from its first visit.
    @Test func reuseRestartsTheIdleClock() async throws {
        let (loop, pool) = makePool()
        let (connection, channel) = try await connection(on: loop)
        pool.put(connection)
        loop.advanceTime(by: .seconds(25))
        #expect(pool.take(key) === connection)
        pool.put(connection)
        loop.advanceTime(by: .seconds(25))
        #expect(channel.isActive, "the sweep used the first idle period")
        loop.advanceTime(by: .seconds(5))
        #expect(!channel.isActive)
    }

    /// An idle connection the origin closes leaves the pool at once and is never handed out.
    @Test func originClosingAnIdleConnectionRemovesIt() async throws {
        let (loop, pool) = makePool()
        let (connection, channel) = try await connection(on: loop)
        pool.put(connection)
        channel.pipeline.fireChannelInactive()
        #expect(pool.idleCount == 0)
        #expect(pool.take(key) == nil)
    }
}
