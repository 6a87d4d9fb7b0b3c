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
    /// Both ends of the proxy's own upstream connections (one redirected back is refused).
    let ownConnections: OwnConnections
    /// Reads a connection's original destination: `OriginalDestination.read` (SO_ORIGINAL_DST) in
    /// the proxy; a test hands in the address it wants the connection to have been sent to.
    let originalDestination: OriginalDestination.Reader
    /// At most one line a second for what any client can repeat at will (hijacks, relays that
    /// failed, connections that were not redirected).
    let hijackLog = LogRateLimiter()
    let problemLog = LogRateLimiter()
    /// The proxy's own connections redirected back to it: a misconfiguration, logged apart.
    let loopLog = LogRateLimiter()

    package init(
        env: ProxyEnvironment, resolver: any UpstreamResolver, stats: TransparentStats, ownListeners: OwnListeners,
        ownConnections: OwnConnections = OwnConnections(),
        originalDestination: @escaping OriginalDestination.Reader = OriginalDestination.read
    ) {
        self.originalDestination = originalDestination
        self.ownConnections = ownConnections
        self.env = env
        self.resolver = resolver
        self.stats = stats
        self.ownListeners = ownListeners
    }
}
