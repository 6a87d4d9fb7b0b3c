import ForwardProxy
import ProxyAccess
import ProxyAdmin
import ProxyKit
import SOCKSProxy
import ProxyUpstream
import TransparentProxy

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import OpenSSLTLS
import ProxyConfig
import ServiceLifecycle

/// The proxy listener as a service: binds, serves until graceful shutdown, then stops accepting, lets
/// in-flight requests finish within the grace period, and closes what is left.
package final class ProxyServer: Service, Sendable {
    let configuration: ProxyConfiguration
    let group: any EventLoopGroup
    let env: ProxyEnvironment
    /// The listener's address once bound (a configured port 0 becomes the real port).
    let bound = NIOLockedValueBox<SocketAddress?>(nil)
    let tracker = ChannelTracker()
    /// Client ACL and connection limits, decided at accept.
    let admission: ClientAdmission
    /// Hashes proxy credentials off the event loops.
    let authThreads: OnDemandThreadPool
    /// Dials origins; a reload changes its policy, timeout and TLS context.
    let connector: UpstreamConnector
    /// The open-file limit the default connection limit is derived from.
    let openFileLimit: Int
    let acceptErrorLog: LogRateLimiter
    /// accept() failures for lack of descriptors or memory, each followed by a pause (`/stats`).
    let acceptCounters = AcceptPauseHandler.Counters()
    let refusalLog: LogRateLimiter
    let logger: Logger
    /// What the transparent listener (`--transparent-listen`) did (`/stats`).
    package let transparentStats = TransparentStats()
    private let onBound: @Sendable (SocketAddress) -> Void
    /// Per-endpoint health learned by every upstream connection (shown by the admin `/health/ips`).
    package let ipHealth: IPHealthRegistry
    /// The TLS listener's certificates (`tls-listen`), replaced by a reload; nil without it.
    let tlsServer: NIOLockedValueBox<TLSServerContext?>
    /// The proxy's and the admin listener's bound addresses, which the proxy never dials.
    package let ownListeners = OwnListeners()

    package init(
        configuration: ProxyConfiguration,
        group: any EventLoopGroup,
        resolver: any UpstreamResolver,
        accessLog: AccessLogWriter,
        logger: Logger,
        ipHealth: IPHealthRegistry? = nil,
        openFileLimit: Int = OpenFileLimit.current(),
        metrics: ProxyMetrics? = nil,
        onBound: @escaping @Sendable (SocketAddress) -> Void = { _ in }
    ) throws(ProxyServerSetupError) {
        let ipHealth = ipHealth ?? IPHealthRegistry(configuration: IPHealthConfiguration(configuration))
        self.ipHealth = ipHealth
        self.configuration = configuration
        self.group = group
        self.logger = logger
        self.onBound = onBound
        // One TLS context for the whole proxy: trust store, ALPN and the session cache are shared by
        // every upstream TLS connection. A failure (e.g. an unreadable --ca-file) stops the start.
        let tlsContext: TLSClientContext
        do {
            tlsContext = try Self.makeTLSContext(configuration)
        } catch {
            throw .tls(error)
        }
        do {
            self.tlsServer = NIOLockedValueBox(try Self.makeTLSServerContext(configuration))
        } catch {
            throw .tlsListener(error)
        }
        let parent: UpstreamConnector.ParentSettings?
        do {
            parent = try Self.parentSettings(configuration)
        } catch {
            throw .parentTLS(error)
        }
        // Credentials are checked before anything else runs: a broken htpasswd file stops the start.
        // The hashing threads start with the first configuration that asks for authentication (now or
        // on a reload): without --proxy-auth they do not exist.
        let authThreads = OnDemandThreadPool(numberOfThreads: max(1, System.coreCount / 2))
        let authenticator: ProxyAuthenticator?
        do {
            authenticator = try ProxyAuthenticator.make(configuration, threadPool: authThreads.pool)
        } catch {
            throw .proxyAuth(error.description)
        }
        if authenticator != nil { authThreads.start() }
        self.authThreads = authThreads
        self.admission = ClientAdmission(
            allowedBlocks: configuration.allowClients,
            maxConnections: configuration.effectiveMaxConnections(openFileLimit: openFileLimit),
            maxConnectionsPerClient: configuration.maxConnectionsPerClient
        )
        self.acceptErrorLog = LogRateLimiter()
        self.refusalLog = LogRateLimiter()
        self.openFileLimit = openFileLimit
        let connector = UpstreamConnector(
            resolver: resolver,
            policy: configuration.destinationPolicy,
            connectTimeout: configuration.connectTimeout,
            tlsContext: tlsContext,
            health: ipHealth,
            ownListeners: ownListeners,
            metrics: metrics,
            outboundMark: configuration.outboundMark,
            ownConnections: configuration.transparentListen == nil ? nil : OwnConnections(),
            routes: configuration.routes,
            parent: parent
        )
        self.connector = connector
        self.env = ProxyEnvironment(
            configuration: configuration,
            connector: connector,
            accessLog: accessLog,
            logger: logger,
            eventLoops: Array(group.makeIterator()),
            authenticator: authenticator,
            metrics: metrics
        )
    }

    /// The upstream TLS client context the configuration asks for: system trust store plus
    /// `--ca-file`, TLS 1.2 minimum, ALPN http/1.1, a handshake timeout equal to `--connect-timeout`.
    /// Limits and the client ACL as in force, for start-up logs and /stats.
    package var accessSummary: [String: String] {
        [
            "max_connections": "\(admission.maxConnections)",
            "max_connections_per_client": "\(admission.maxConnectionsPerClient)",
            "allow_client": admission.allowedBlocks.map { "\($0)" }.joined(separator: ","),
            "proxy_auth": env.authenticator == nil ? "off" : "basic",
        ]
    }

    /// What the ACL, the limits and proxy authentication did so far (admin `/stats`).
    package var accessStats: AccessStats {
        AccessStats(
            openConnections: admission.openConnections,
            maxConnections: admission.maxConnections,
            maxConnectionsPerClient: admission.maxConnectionsPerClient,
            rejectedByACL: admission.rejectedByACL,
            rejectedByLimits: admission.rejectedByLimits,
            acceptFailures: acceptCounters.acceptFailures,
            authSuccesses: env.authenticator?.successes,
            authFailures: env.authenticator?.failures,
            transparent: transparentSnapshot
        )
    }

    package static func makeTLSContext(_ configuration: ProxyConfiguration) throws(TLSError) -> TLSClientContext {
        if let caFile = configuration.caFile, access(caFile, R_OK) != 0 {
            // OpenSSL would only say "system lib".
            throw TLSError.configuration(reason: "cannot read CA file \(caFile): \(String(cString: strerror(errno)))")
        }
        var tls = TLSClientConfiguration()
        tls.caFile = configuration.caFile
        tls.useSystemTrustStore = true
        tls.alpn = ["http/1.1"]
        tls.handshakeTimeout = configuration.connectTimeout.duration
        return try TLSClientContext(configuration: tls)
    }

    /// `parent-proxy` with `parent-resolve` and `parent-down`, and the TLS context of an
    /// `https://` parent; nil without a parent.
    package static func parentSettings(_ configuration: ProxyConfiguration) throws(TLSError) -> UpstreamConnector.ParentSettings? {
        guard let parent = configuration.parentProxy else { return nil }
        var tls: TLSClientContext?
        if parent.tls {
            let caFile = configuration.parentCAFile ?? configuration.caFile
            let option = configuration.parentCAFile == nil ? "--ca-file" : "--parent-ca-file"
            if let caFile, access(caFile, R_OK) != 0 {
                throw TLSError.configuration(reason: "cannot read \(option) \(caFile): \(String(cString: strerror(errno)))")
            }
            var settings = TLSClientConfiguration()
            settings.caFile = caFile
            settings.useSystemTrustStore = true
            settings.handshakeTimeout = configuration.connectTimeout.duration
            tls = try TLSClientContext(configuration: settings)
        }
        return .init(proxy: parent, resolve: configuration.parentResolve, down: configuration.parentDown, tls: tls)
    }

    /// True once shutdown began (the admin health check reports it).
    package var isDraining: Bool { env.isDraining }

    /// A client listener's bootstrap: backlog, address reuse, and the accept pause — accept()
    /// failing for lack of descriptors (EMFILE/ENFILE) must not spin the loop: the listener leaves
    /// epoll for 100 ms, open connections are served meanwhile.
    func listenerBootstrap() -> ServerBootstrap {
        ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .pausingAcceptOnShortage("proxy", counters: acceptCounters, log: acceptErrorLog, logger: logger)
            .childChannelOption(.socketOption(.so_reuseaddr), value: 1)
    }

    package func run() async throws {
        let env = self.env
        let tracker = self.tracker
        let admission = self.admission
        let logger = self.logger
        let refusalLog = self.refusalLog
        let metrics = env.metrics
        let mixed = configuration.listenSOCKS
        let bootstrap = listenerBootstrap()
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let verdict = Self.admit(channel, tracker: tracker, admission: admission, metrics: metrics, refusalLog: refusalLog, logger: logger)
                    if mixed {
                        // HTTP or SOCKS, by the first byte (`listen-socks`).
                        try channel.pipeline.syncOperations.addHandler(MixedPortHandler(env: env, admission: verdict))
                    } else {
                        try ClientPipeline.configure(channel, env: env, admission: verdict)
                    }
                }
            }
        let serverChannel: any Channel
        let transparentChannel: (any Channel)?
        let socksChannel: (any Channel)?
        let tlsChannel: (any Channel)?
        do {
            serverChannel = try await bootstrap.bind(host: configuration.listen.host, port: configuration.listen.port).get()
        } catch {
            await authThreads.shutdownGracefully()
            throw ListenerBindError(listener: "proxy", option: "--listen", host: configuration.listen.host, port: configuration.listen.port, error: error)
        }
        do {
            transparentChannel = try await bindTransparentListener()
        } catch {
            try? await serverChannel.close()
            await authThreads.shutdownGracefully()
            throw error
        }
        do {
            socksChannel = try await bindSOCKSListener()
        } catch {
            try? await serverChannel.close()
            try? await transparentChannel?.close()
            await authThreads.shutdownGracefully()
            throw error
        }
        do {
            tlsChannel = try await bindTLSListener()
        } catch {
            try? await serverChannel.close()
            try? await transparentChannel?.close()
            try? await socksChannel?.close()
            await authThreads.shutdownGracefully()
            throw error
        }

        if let address = serverChannel.localAddress {
            ownListeners.add(address)
            bound.withLockedValue { $0 = address }
            logger.info("proxy listening", metadata: ["address": "\(address.endpointText)"])
            onBound(address)
        }

        // Serve until asked to stop (SIGTERM/SIGINT through the service group), then drain.
        try? await gracefulShutdown()
        env.startDraining()
        logger.info("shutting down: no new connections; draining", metadata: ["open_connections": "\(tracker.count)"])
        try? await serverChannel.close()
        try? await transparentChannel?.close()
        try? await socksChannel?.close()
        try? await tlsChannel?.close()
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
        await authThreads.shutdownGracefully()
        logger.info("proxy stopped")
    }
}
