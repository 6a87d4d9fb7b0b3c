/// Counters for one domain, like the mobile SDKs' request report (`/stats`).
public struct DomainStats: Sendable, Equatable, Codable {
    /// The domain, `ResolverStats.otherBucket` for domains beyond the tracking limit, or
    /// `ResolverStats.totalName` for the totals.
    public var name: String
    public var cacheHits = 0
    public var staleHits = 0
    public var negativeHits = 0
    /// HTTPDNS queries (cold misses, refreshes, prefetches, preloads).
    public var queries = 0
    public var successes = 0
    public var timeouts = 0
    /// Failed queries by `ResolveFailure.Kind` raw value (timeouts included).
    public var errorsByKind: [String: Int] = [:]
    public var fallbacksToSystem = 0
    /// Mean round trip of the queries, in milliseconds (0 before the first query).
    public var avgResolveMs: Double = 0
    public var maxResolveMs: Double = 0
    /// Where the latest answer for the name came from: `cache`, `stale`, `httpdns` (a query) or
    /// `system` (fallback to system DNS); nil before any. Cache hits are counted in batches, but a
    /// name's hits are always reported before its next query.
    public var lastSource: String?
    /// HTTPDNS answers compared with the system resolver's (`--compare-system-dns`).
    public var systemChecks = 0
    /// Of those, the ones where the system resolver disagreed (no common address, or no answer).
    public var systemDisagreements = 0

    public init(name: String) {
        self.name = name
    }
}
