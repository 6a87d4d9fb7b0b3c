import NIOCore
import NIOPosix

/// A loopback TCP server that accepts connections and never sends a byte (nor closes them):
/// the peer for handshake-timeout tests.
public final class SilentTCPServer: Sendable {
    public let host: String
    public let port: Int
    private let channel: any Channel
    private let accepted: Guarded<Int>

    private init(host: String, port: Int, channel: any Channel, accepted: Guarded<Int>) {
        self.host = host
        self.port = port
        self.channel = channel
        self.accepted = accepted
    }

    /// Binds to `host` ("127.0.0.1" or "::1"), port 0.
    public static func start(
        host: String = "127.0.0.1",
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> SilentTCPServer {
        let accepted = Guarded(0)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                accepted.withLock { $0 += 1 }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: host, port: 0)
            .get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw TestCAError("silent server has no local port")
        }
        return SilentTCPServer(host: host, port: port, channel: channel, accepted: accepted)
    }

    /// Connections accepted so far.
    public var acceptedConnections: Int { self.accepted.withLock { $0 } }

    /// Closes the listening socket; accepted connections stay until their peers close them.
    public func shutdown() async throws {
        try await self.channel.close()
    }
}
