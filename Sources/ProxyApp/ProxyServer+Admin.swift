import NIOCore
import ProxyAdmin
import ProxyConfig
import ProxyKit

/// What the admin listener asks of the running proxy.
extension ProxyServer {
    /// The proxy listener's bound address; nil before it listens.
    package var boundAddress: SocketAddress? {
        bound.withLockedValue { $0 }
    }

    /// Closes the idle upstream connections to `host` (all hosts when nil) on every event loop and
    /// retires the busy ones, so the next request resolves and dials afresh. Succeeds on `eventLoop`
    /// with the number of idle connections closed.
    package func retirePooledConnections(host: String?, on eventLoop: any EventLoop) -> EventLoopFuture<Int> {
        let retired = env.allPools.map { pool in
            pool.eventLoop.submit { pool.retire(host: host) }
        }
        return EventLoopFuture.whenAllSucceed(retired, on: eventLoop).map { $0.reduce(0, +) }
    }

    /// `/errors`: the last failed requests and tunnels, newest first.
    package var recentErrors: RecentErrorsReport {
        env.recentErrors.report
    }

    /// `/summary`: version, uptime, the configuration in force (secrets redacted), connections
    /// against their limits, and the traffic since the start.
    package func summary(version: String) -> AdminSummary {
        let access = accessStats
        let tally = env.traffic.total
        let uptime = ContinuousClock.now - env.started
        return AdminSummary(
            version: version, startedAt: env.startedAt, uptimeSeconds: Int(uptime.components.seconds),
            connections: .init(
                open: access.openConnections, max: access.maxConnections, maxPerClient: access.maxConnectionsPerClient,
                tunnels: env.traffic.openTunnels),
            requests: AdminSummary.requests(tally), latency: AdminSummary.latency(tally.latency),
            configuration: env.configuration.effectiveSettings)
    }

    /// The settings `/proxy.pac` is made from.
    package var pacSettings: PACSettings {
        PACSettings(
            configured: configuration.pacProxy,
            listen: configuration.listen,
            bypass: configuration.pacBypass,
            boundAddress: { [bound] in bound.withLockedValue { $0 } }
        )
    }
}
