import NIOCore
import ProxyConfig

/// What every connection of the transparent listener shares.
final class TransparentContext: Sendable {
    let env: ProxyEnvironment
    /// Answers the SNI and Host names (the proxy's resolver stack: HTTPDNS, cache, fallback).
    let resolver: any UpstreamResolver
    let stats: TransparentStats
    let ownListeners: OwnListeners
    /// At most one line a second for what any client can repeat at will (hijacks, relays that
    /// failed, connections that were not redirected).
    let hijackLog = LogRateLimiter()
    let problemLog = LogRateLimiter()

    init(env: ProxyEnvironment, resolver: any UpstreamResolver, stats: TransparentStats, ownListeners: OwnListeners) {
        self.env = env
        self.resolver = resolver
        self.stats = stats
        self.ownListeners = ownListeners
    }
}
