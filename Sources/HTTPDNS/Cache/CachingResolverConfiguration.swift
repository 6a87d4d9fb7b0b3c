/// How a `CachingResolver` keeps its cache warm and where it persists it.
public struct CachingResolverConfiguration: Sendable {
    public var cache: DNSCacheConfiguration
    /// Names refreshed before they expire whether or not anyone asks for them, and resolved at start.
    /// Default none.
    public var keepaliveDomains: Set<String>
    /// Names resolved at start, so the first requests are cache hits. Default none.
    public var preload: [String]
    /// Lookups during one TTL that make a name "hot", i.e. refreshed at `prefetchFraction` of its
    /// TTL like a keepalive name. Default 2.
    public var hotThreshold: Int
    /// Where the cache is saved so a restart starts warm; `nil` (the default) disables persistence.
    public var cacheFile: String?
    /// How often the cache file is rewritten (it is also written on shutdown). Default 60 s.
    public var persistInterval: Duration
    /// Names per batch query (preload and prefetch) when the provider supports batches. Default 5,
    /// the Alibaba batch API's limit.
    public var batchSize: Int
    /// After a network change every cached name is refreshed once, one request (a name, or a
    /// batch of `batchSize` names) per this interval, so the service sees a trickle rather than a
    /// burst. Default 100 ms.
    public var networkRefreshSpacing: Duration = .milliseconds(100)

    public init(
        cache: DNSCacheConfiguration = .init(),
        keepaliveDomains: Set<String> = [],
        preload: [String] = [],
        hotThreshold: Int = 2,
        cacheFile: String? = nil,
        persistInterval: Duration = .seconds(60),
        batchSize: Int = 5
    ) {
        precondition(batchSize > 0, "batchSize must be positive")
        precondition(persistInterval > .zero, "persistInterval must be positive")
        self.cache = cache
        self.keepaliveDomains = keepaliveDomains
        self.preload = preload
        self.hotThreshold = hotThreshold
        self.cacheFile = cacheFile
        self.persistInterval = persistInterval
        self.batchSize = batchSize
    }
}
