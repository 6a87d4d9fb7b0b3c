import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ProxyConfig
import ServiceLifecycle

/// The proxy listener as a service: binds, serves until graceful shutdown, then stops accepting, lets
/// in-flight requests finish within the grace period, and closes what is left.
public final class ProxyServer: Service, Sendable {
    private let configuration: ProxyConfiguration
    private let group: any EventLoopGroup
    private let env: ProxyEnvironment
    private let tracker = ChannelTracker()
    private let logger: Logger
    private let onBound: @Sendable (SocketAddress) -> Void

    public init(
        configuration: ProxyConfiguration,
        group: any EventLoopGroup,
        resolver: any UpstreamResolver,
        accessLog: AccessLogWriter,
        logger: Logger,
        onBound: @escaping @Sendable (SocketAddress) -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.group = group
        self.logger = logger
        self.onBound = onBound
        let connector = UpstreamConnector(
            resolver: resolver,
            policy: DestinationPolicy(allow: configuration.allowDestinations),
            connectTimeout: configuration.connectTimeout
        )
        self.env = ProxyEnvironment(
            configuration: configuration,
            connector: connector,
            accessLog: accessLog,
            logger: logger,
            eventLoops: Array(group.makeIterator())
        )
    }

    /// True once shutdown began (the admin health check reports it).
    public var isDraining: Bool { env.isDraining }

    /// The handlers of an accepted client connection. We frame responses ourselves (the encoder must
    /// not add framing headers) and keep bytes after a CONNECT or upgrade head for the tunnel.
    static func configureClientPipeline(_ channel: any Channel, env: ProxyEnvironment) throws {
        let sync = channel.pipeline.syncOperations
        let observer = ClientActivityObserver()
        var encoderConfiguration = HTTPResponseEncoder.Configuration()
        encoderConfiguration.automaticallySetFramingHeaders = false
        try sync.addHandler(observer)
        try sync.addHandler(HTTPResponseEncoder(configuration: encoderConfiguration))
        try sync.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes)))
        try sync.addHandler(ClientConnectionHandler(env: env, pool: env.pool(for: channel.eventLoop), observer: observer))
    }

    public func run() async throws {
        let env = self.env
        let tracker = self.tracker
        let serverChannel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    tracker.add(channel)
                    try Self.configureClientPipeline(channel, env: env)
                }
            }
            .bind(host: configuration.listen.host, port: configuration.listen.port)
            .get()

        if let address = serverChannel.localAddress {
            logger.info("proxy listening", metadata: ["address": "\(ClientConnectionHandler.format(address))"])
            onBound(address)
        }

        // Serve until asked to stop (SIGTERM/SIGINT through the service group), then drain.
        try? await gracefulShutdown()
        env.startDraining()
        logger.info("shutting down: no new connections; draining", metadata: ["open_connections": "\(tracker.count)"])
        try? await serverChannel.close()
        tracker.quiesceAll()

        let loop = group.next()
        let deadline = loop.scheduleTask(in: configuration.shutdownGrace) {
            tracker.closeAll()
        }
        try? await tracker.allClosed(on: loop).get()
        deadline.cancel()
        for pool in env.allPools {
            try? await pool.eventLoop.submit { pool.closeAll() }.get()
        }
        logger.info("proxy stopped")
    }
}
