import Logging
import NIOCore
import ProxyConfig
import Synchronization

/// Everything a client connection needs, shared by all connections of one server.
final class ProxyEnvironment: Sendable {
    let configuration: ProxyConfiguration
    let connector: any UpstreamConnecting
    let accessLog: AccessLogWriter
    let logger: Logger
    /// Checks Basic proxy credentials; nil when `--proxy-auth` is not set.
    let authenticator: ProxyAuthenticator?
    /// The `Via` value added to forwarded messages (from `--via`).
    let via: ViaHeader
    private let pools: [ObjectIdentifier: UpstreamPool]
    /// Read on every request by every event loop: an atomic load, not a lock (whose write would
    /// bounce its cache line between the loops).
    private let draining = Atomic<Bool>(false)

    init(
        configuration: ProxyConfiguration,
        connector: any UpstreamConnecting,
        accessLog: AccessLogWriter,
        logger: Logger,
        eventLoops: [any EventLoop],
        authenticator: ProxyAuthenticator? = nil
    ) {
        self.authenticator = authenticator
        self.configuration = configuration
        self.connector = connector
        self.accessLog = accessLog
        self.logger = logger
        self.via = ViaHeader(pseudonym: configuration.viaPseudonym)
        var pools: [ObjectIdentifier: UpstreamPool] = [:]
        for loop in eventLoops {
            pools[ObjectIdentifier(loop)] = UpstreamPool(
                eventLoop: loop,
                maxIdlePerOrigin: configuration.poolMaxIdle,
                idleTimeout: configuration.poolIdleTimeout
            )
        }
        self.pools = pools
    }

    func pool(for eventLoop: any EventLoop) -> UpstreamPool {
        guard let pool = pools[ObjectIdentifier(eventLoop)] else {
            preconditionFailure("no upstream pool for event loop \(eventLoop)")
        }
        return pool
    }

    var allPools: [UpstreamPool] { Array(pools.values) }

    var isDraining: Bool { draining.load(ordering: .relaxed) }

    func startDraining() { draining.store(true, ordering: .relaxed) }
}
