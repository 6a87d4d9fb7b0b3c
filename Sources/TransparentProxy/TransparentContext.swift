import ForwardProxy
import NIOCore
import ProxyConfig
import ProxyKit
import ProxyUpstream

/// What every connection of the transparent listener shares.
package final class TransparentContext: Sendable {
    let env: ProxyEnvironment
    /// Answers the SNI and Host names (the proxy's resolver stack: HTTPDNS, cache, fallback).
    let resolver: any UpstreamResolver
    let stats: TransparentStats
    let ownListeners: OwnListeners
    /// The local ends of the proxy's own upstream connections (one redirected back is refused).
    let ownConnections: OwnConnections
    /// At most one line a second for what any client can repeat at will (hijacks, relays that
    /// failed, connections that were not redirected).
    let hijackLog = LogRateLimiter()
    let problemLog = LogRateLimiter()
    /// The proxy's own connections redirected back to it: a misconfiguration, logged apart.
    let loopLog = LogRateLimiter()

    package init(
        env: ProxyEnvironment, resolver: any UpstreamResolver, stats: TransparentStats, ownListeners: OwnListeners,
        ownConnections: OwnConnections = OwnConnections()
    ) {
        self.ownConnections = ownConnections
        self.env = env
        self.resolver = resolver
        self.stats = stats
        self.ownListeners = ownListeners
    }
}
