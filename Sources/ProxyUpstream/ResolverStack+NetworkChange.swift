import HTTPDNS
import ProxyConfig

extension ResolverStack {
    /// What the resolver did about a network change.
    package struct NetworkChangeOutcome: Sendable, Equatable {
        /// The families asked for from now on, when `ip-family` is `auto` and they changed.
        package var families: AddressFamilies?
        /// Names marked for one background refresh.
        package var refreshing: Int

        package init(families: AddressFamilies? = nil, refreshing: Int = 0) {
            self.families = families
            self.refreshing = refreshing
        }
    }

    /// The host's network changed: with `ip-family auto` the families are detected again; the
    /// provider is told (a provider that learns its service addresses at run time fetches them
    /// again) before any refresh is sent; then every cached name is refreshed once in the
    /// background while its old answer is still served.
    package func networkDidChange() async -> NetworkChangeOutcome {
        let families = redetectFamilies()
        let refreshing = await Self.networkDidChange(provider: provider, caching: caching)
        return NetworkChangeOutcome(families: families, refreshing: refreshing)
    }

    /// The provider hook, then the cache's refresh marks (apart, so tests drive it with fakes).
    static func networkDidChange<C: Clock>(provider: (any HTTPDNSProvider)?, caching: CachingResolver<C>?) async -> Int
    where C.Duration == Duration {
        await provider?.networkDidChange()
        return caching?.refreshAllInBackground() ?? 0
    }
}
