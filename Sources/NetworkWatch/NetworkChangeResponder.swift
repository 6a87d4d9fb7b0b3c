import HTTPDNS
import Logging
import NIOCore
import ProxyUpstream

/// What the proxy does when the host's network changed: forget what was learned about origin
/// addresses on the old network (per-IP health, pooled connections), then let the resolver catch
/// up (families, provider, a background refresh of every cached name). Old answers keep being
/// served until their refresh lands: the cache is never wiped.
package struct NetworkChangeResponder: Sendable {
    /// Forgets per-IP health (back-offs and connect times measured over the old path).
    var resetHealth: @Sendable () -> Void
    /// Closes the idle pooled upstream connections and retires the busy ones; how many idle closed.
    var retirePooled: @Sendable () async -> Int
    var resolver: @Sendable () async -> ResolverStack.NetworkChangeOutcome
    let logger: Logger

    package init(
        resetHealth: @escaping @Sendable () -> Void,
        retirePooled: @escaping @Sendable () async -> Int,
        resolver: @escaping @Sendable () async -> ResolverStack.NetworkChangeOutcome,
        logger: Logger
    ) {
        self.resetHealth = resetHealth
        self.retirePooled = retirePooled
        self.resolver = resolver
        self.logger = logger
    }

    package func respond(to change: NetworkChange) async {
        resetHealth()
        let closed = await retirePooled()
        let outcome = await resolver()
        var metadata: Logger.Metadata = [
            "network.ipv4_before": "\(change.old.ipv4Count)", "network.ipv4_after": "\(change.new.ipv4Count)",
            "network.ipv6_prefixes_before": "\(change.old.ipv6Count)", "network.ipv6_prefixes_after": "\(change.new.ipv6Count)",
            "network.added": "\(change.added)", "network.removed": "\(change.removed)",
            "pool.closed_idle": "\(closed)", "resolver.refreshing": "\(outcome.refreshing)",
        ]
        if let families = outcome.families { metadata["resolver.families"] = "\(families.rawValue)" }
        logger.notice("network changed: per-IP health reset, pooled connections retired, cached names refreshing in the background", metadata: metadata)
    }
}
