import NIOCore
import ProxyConfig

/// What the admin listener asks of the running proxy.
extension ProxyServer {
    /// The proxy listener's bound address; nil before it listens.
    public var boundAddress: SocketAddress? {
        bound.withLockedValue { $0 }
    }

    /// Closes the idle upstream connections to `host` (all hosts when nil) on every event loop and
    /// retires the busy ones, so the next request resolves and dials afresh. Succeeds on `eventLoop`
    /// with the number of idle connections closed.
    public func retirePooledConnections(host: String?, on eventLoop: any EventLoop) -> EventLoopFuture<Int> {
        let retired = env.allPools.map { pool in
            pool.eventLoop.submit { pool.retire(host: host) }
        }
        return EventLoopFuture.whenAllSucceed(retired, on: eventLoop).map { $0.reduce(0, +) }
    }

    /// `/errors`: the last failed requests and tunnels, newest first.
    public var recentErrors: RecentErrorsReport {
        env.recentErrors.report
    }

    /// The settings `/proxy.pac` is made from.
    public var pacSettings: PACSettings {
        PACSettings(
            configured: configuration.pacProxy,
            listen: configuration.listen,
            bypass: configuration.pacBypass,
            boundAddress: { [bound] in bound.withLockedValue { $0 } }
        )
    }
}
