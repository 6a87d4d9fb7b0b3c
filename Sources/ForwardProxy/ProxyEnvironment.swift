import Logging
import NIOConcurrencyHelpers
import NIOCore
import ProxyAccess
import ProxyConfig
import ProxyHTTP
import ProxyKit
import ProxyUpstream
import Synchronization

/// Everything a client connection needs, shared by all connections of one server.
package final class ProxyEnvironment: Sendable {
    /// What a configuration reload changes for new requests: swapped whole, with a generation a
    /// connection compares (one atomic load) before it starts a request.
    package struct Live: Sendable {
        var configuration: ProxyConfiguration
        /// Checks Basic proxy credentials; nil when `--proxy-auth` is not set.
        var authenticator: ProxyAuthenticator?

        package init(configuration: ProxyConfiguration, authenticator: ProxyAuthenticator?) {
            self.configuration = configuration
            self.authenticator = authenticator
        }
    }

    private let live: NIOLockedValueBox<Live>
    private let liveGeneration = Atomic<Int>(0)
    package let connector: any UpstreamConnecting
    let accessLog: AccessLogWriter
    package let logger: Logger
    /// Prometheus metrics; nil when off.
    package let metrics: ProxyMetrics?
    /// The `Via` value added to forwarded messages (from `--via`).
    let via: ViaHeader
    private let pools: [ObjectIdentifier: UpstreamPool]
    /// The last failed requests and tunnels (`/errors`, the admin page).
    package let recentErrors = RecentErrors()
    /// Status classes, bytes and request times since the start, and the open tunnels (`/summary`).
    package let traffic: TrafficRecorder
    /// When the server was made (uptime in `/summary`).
    package let started = ContinuousClock.now
    package let startedAt = Timestamp.iso8601Now()
    /// Read on every request by every event loop: an atomic load, not a lock (whose write would
    /// bounce its cache line between the loops).
    private let draining = Atomic<Bool>(false)

    package init(
        configuration: ProxyConfiguration,
        connector: any UpstreamConnecting,
        accessLog: AccessLogWriter,
        logger: Logger,
        eventLoops: [any EventLoop],
        authenticator: ProxyAuthenticator? = nil,
        metrics: ProxyMetrics? = nil
    ) {
        self.live = NIOLockedValueBox(Live(configuration: configuration, authenticator: authenticator))
        self.metrics = metrics
        self.connector = connector
        self.accessLog = accessLog
        self.logger = logger
        self.via = ViaHeader(pseudonym: configuration.viaPseudonym)
        var pools: [ObjectIdentifier: UpstreamPool] = [:]
        for loop in eventLoops {
            pools[ObjectIdentifier(loop)] = UpstreamPool(
                eventLoop: loop,
                maxIdlePerOrigin: configuration.poolMaxIdle,
                idleTimeout: configuration.poolIdleTimeout,
                leases: connector,
                metrics: metrics,
                logger: logger
            )
        }
        self.pools = pools
        self.traffic = TrafficRecorder(eventLoops: eventLoops)
    }

    /// The configuration in force now (a reload replaces it for new requests).
    package var configuration: ProxyConfiguration { live.withLockedValue { $0.configuration } }
    package var authenticator: ProxyAuthenticator? { live.withLockedValue { $0.authenticator } }
    /// Changes with every reload.
    var generation: Int { liveGeneration.load(ordering: .acquiring) }

    /// The settings in force and their generation.
    func current() -> (live: Live, generation: Int) {
        live.withLockedValue { ($0, liveGeneration.load(ordering: .relaxed)) }
    }

    /// A reload: new requests use `new`; exchanges under way and open tunnels carry on.
    package func update(_ new: Live) {
        live.withLockedValue {
            $0 = new
            liveGeneration.wrappingAdd(1, ordering: .releasing)
        }
    }

    func pool(for eventLoop: any EventLoop) -> UpstreamPool {
        guard let pool = pools[ObjectIdentifier(eventLoop)] else {
            preconditionFailure("no upstream pool for event loop \(eventLoop)")
        }
        return pool
    }

    package var allPools: [UpstreamPool] { Array(pools.values) }

    /// Whether requests build records: always, since the recent-errors ring reads every failure
    /// (with the access log off and metrics off as well as on).
    var recordsEnabled: Bool { true }

    /// A request or tunnel is over: log it, count it, keep it if it failed.
    package func finished(_ record: AccessLogRecord) {
        accessLog.write(record)
        metrics?.finished(record)
        if record.errorReason != nil { recentErrors.record(record) }
        traffic.add(record)
    }

    package var isDraining: Bool { draining.load(ordering: .relaxed) }

    package func startDraining() { draining.store(true, ordering: .relaxed) }
}
