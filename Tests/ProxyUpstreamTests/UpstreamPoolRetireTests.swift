import NIOCore
import NIOEmbedded
import Testing

@testable import ProxyUpstream

/// Purging a host retires its pooled connections: idle ones close at once, busy ones when returned.
@Suite struct UpstreamPoolRetireTests {
    private let key = PoolKey(host: "origin.test", port: 80, tls: false)
    private let other = PoolKey(host: "other.test", port: 80, tls: false)

    private func connection(on loop: EmbeddedEventLoop, key: PoolKey) async throws -> (UpstreamHTTPConnection, EmbeddedChannel) {
        let handler = UpstreamHTTPConnection(key: key)
        let channel = EmbeddedChannel(handler: handler, loop: loop)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        return (handler, channel)
    }

    @Test func retiringAHostClosesItsIdleConnectionsOnly() async throws {
        let loop = EmbeddedEventLoop()
        let pool = UpstreamPool(eventLoop: loop, maxIdlePerOrigin: 4, idleTimeout: .seconds(30))
        let (a, aChannel) = try await connection(on: loop, key: key)
        let (b, bChannel) = try await connection(on: loop, key: PoolKey(host: "origin.test", port: 443, tls: true))
        let (c, cChannel) = try await connection(on: loop, key: other)
        for connection in [a, b, c] { pool.put(connection) }

        #expect(pool.retire(host: "Origin.Test.") == 2)
        #expect(!aChannel.isActive && !bChannel.isActive)
        #expect(cChannel.isActive)
        #expect(pool.take(key) == nil)
        #expect(pool.take(other) === c)
    }

    @Test func aConnectionBusyDuringThePurgeIsClosedWhenReturned() async throws {
        let loop = EmbeddedEventLoop()
        let pool = UpstreamPool(eventLoop: loop, maxIdlePerOrigin: 4, idleTimeout: .seconds(30))
        let (busy, busyChannel) = try await connection(on: loop, key: key)
        let (busyOther, busyOtherChannel) = try await connection(on: loop, key: other)
        #expect(pool.retire(host: "origin.test") == 0)
        let (fresh, freshChannel) = try await connection(on: loop, key: key)

        pool.put(busy)
        pool.put(busyOther)
        pool.put(fresh)
        #expect(!busyChannel.isActive, "dialed before the purge: must not be reused")
        #expect(busyOtherChannel.isActive)
        #expect(freshChannel.isActive, "dialed after the purge")
        #expect(pool.take(key) === fresh)
    }

    @Test func retiringEverythingClosesAllIdleAndRetiresAllBusy() async throws {
        let loop = EmbeddedEventLoop()
        let pool = UpstreamPool(eventLoop: loop, maxIdlePerOrigin: 4, idleTimeout: .seconds(30))
        let (idle, idleChannel) = try await connection(on: loop, key: key)
        let (busy, busyChannel) = try await connection(on: loop, key: other)
        pool.put(idle)
        #expect(pool.retire(host: nil) == 1)
        #expect(!idleChannel.isActive)
        pool.put(busy)
        #expect(!busyChannel.isActive)
        #expect(pool.idleCount == 0)
    }

    @Test func perHostMarksAreBounded() async throws {
        let loop = EmbeddedEventLoop()
        let pool = UpstreamPool(eventLoop: loop, maxIdlePerOrigin: 4, idleTimeout: .seconds(30))
        let (old, oldChannel) = try await connection(on: loop, key: other)
        for index in 0...UpstreamPool.maxRetiredHosts {
            pool.retire(host: "h\(index).test")
        }
        #expect(pool.retiredBelow.count <= UpstreamPool.maxRetiredHosts)
        // Collapsing the marks errs on the side of dialing afresh.
        pool.put(old)
        #expect(!oldChannel.isActive)
    }
}
