import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ProxyConfig
import Testing

@testable import ProxyUpstream

/// The connector records the local end of each connection it makes, so the transparent listener
/// can tell the proxy's own connection (redirected back to it) from an app's: on loopback only.
@Suite(.timeLimit(.minutes(1))) struct OwnConnectionsTests {
    struct FixedResolver: UpstreamResolver {
        var answer: Resolution

        func resolve(host: String, port: Int, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution> {
            eventLoop.makeSucceededFuture(answer)
        }

        func fallback(after failed: Resolution, host: String, port: Int, reason: String, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution>? {
            nil
        }
    }

    @Test func theConnectorsConnectionsAreRecognisedByTheirPeersUntilTheyClose() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        // What the accepting side sees as its client: what a redirected connection's handler checks.
        let peer = group.next().makePromise(of: SocketAddress.self)
        let server = try ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                peer.succeed(channel.remoteAddress!)
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        defer { try? server.close().wait() }
        let port = server.localAddress!.port!
        let connector = UpstreamConnector(
            resolver: FixedResolver(answer: Resolution(addresses: [try SocketAddress(ipAddress: "127.0.0.1", port: port)], source: .cache)),
            policy: DestinationPolicy(allow: [CIDR("127.0.0.0/8")!]), connectTimeout: .seconds(5))
        let own = try #require(connector.ownConnections)

        let upstream = try connector.connect(host: "origin.test", port: port, on: group.next()) { $0.eventLoop.makeSucceededVoidFuture() }.wait()
        let client = try peer.futureResult.wait()
        #expect(own.contains(client))
        // The same end seen on a dual-stack listener (IPv4-mapped) is the same connection.
        #expect(own.contains(try SocketAddress(ipAddress: "::ffff:127.0.0.1", port: client.port!)))
        #expect(!own.contains(server.localAddress))
        #expect(!own.contains(try SocketAddress(ipAddress: "127.0.0.1", port: client.port! == 65535 ? 1 : client.port! + 1)))

        try upstream.channel.close().wait()
        try upstream.channel.closeFuture.wait()
        #expect(!own.contains(client))
        #expect(own.count == 0)
    }
}
