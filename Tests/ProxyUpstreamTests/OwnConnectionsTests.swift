import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ProxyConfig
import Testing

@testable import ProxyUpstream

/// The connector records the local end of each connection it makes, so the transparent listener
/// can tell the proxy's own connection (redirected back to it) from an app's, by both ends: on
/// loopback only.
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

    @Test func theConnectorsConnectionsAreRecognisedByTheirPeersUntilTheyClose() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // What the accepting side sees as its client: what a redirected connection's handler checks.
        let peer = group.next().makePromise(of: SocketAddress.self)
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                peer.succeed(channel.remoteAddress!)
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = server.localAddress!.port!
        let connector = UpstreamConnector(
            resolver: FixedResolver(answer: Resolution(addresses: [try SocketAddress(ipAddress: "127.0.0.1", port: port)], source: .cache)),
            policy: DestinationPolicy(allow: [CIDR("127.0.0.0/8")!]), connectTimeout: .seconds(5))
        let own = try #require(connector.ownConnections)

        let upstream = try await connector.connect(host: "origin.test", port: port, on: group.next()) { $0.eventLoop.makeSucceededVoidFuture() }.get()
        let client = try await peer.futureResult.get()
        let origin = server.localAddress
        #expect(own.contains(client: client, original: origin))
        // The same ends seen on a dual-stack listener (IPv4-mapped) are the same connection.
        #expect(own.contains(client: try SocketAddress(ipAddress: "::ffff:127.0.0.1", port: client.port!), original: origin))
        #expect(!own.contains(client: origin, original: client))
        #expect(!own.contains(client: try SocketAddress(ipAddress: "127.0.0.1", port: client.port! == 65535 ? 1 : client.port! + 1), original: origin))
        // An app's connection from the same address and port number (a pod's shared address) to
        // another destination is not the proxy's: the local end alone does not decide.
        #expect(!own.contains(client: client, original: try SocketAddress(ipAddress: "192.0.2.10", port: 443)))
        #expect(!own.contains(client: client, original: try SocketAddress(ipAddress: "127.0.0.1", port: port == 65535 ? 1 : port + 1)))

        try await upstream.channel.close().get()
        try await upstream.channel.closeFuture.get()
        #expect(!own.contains(client: client, original: origin))
        #expect(own.count == 0)
        try await server.close().get()
        try await group.shutdownGracefully()
    }
}
