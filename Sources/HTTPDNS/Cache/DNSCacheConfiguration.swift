/// Limits and policies of a `DNSCache`. Defaults follow the mobile HTTPDNS SDKs.
public struct DNSCacheConfiguration: Sendable, Equatable {
    /// Answers are kept at least this long even if the service says less. Default 0: honour the
    /// service, since HTTPDNS TTLs are chosen for client-side steering.
    public var minTTL: Duration = .zero
    /// Answers are kept at most this long. Default 3600 s.
    public var maxTTL: Duration = .seconds(3600)
    /// Negative answers (NXDOMAIN / no data) are kept for the service's negative TTL, but never
    /// longer than this, nor longer than this when the service gives none. Default 30 s.
    public var negativeTTLCap: Duration = .seconds(30)
    /// Names kept; beyond this the least recently used is evicted. Default 10,000.
    public var capacity: Int = 10_000
    /// How long after expiry an answer may still be served while a refresh runs. Default 1 h.
    public var maxStale: Duration = .seconds(3600)
    /// Never expire answers: past their TTL they are served (as stale) forever and only refreshed
    /// in the background. Negative answers still expire. Default off.
    public var immutable: Bool = false
    /// Hot and keepalive names are refreshed once this fraction of their TTL has passed, so they
    /// never go stale. Default 0.75.
    public var prefetchFraction: Double = 0.75
    /// After a failed refresh the name is not refreshed again for this long, so an unreachable
    /// service is not hammered by every stale hit or prefetch pass. Default 5 s.
    public var refreshRetryInterval: Duration = .seconds(5)

    public init(
        minTTL: Duration = .zero,
        maxTTL: Duration = .seconds(3600),
        negativeTTLCap: Duration = .seconds(30),
        capacity: Int = 10_000,
        maxStale: Duration = .seconds(3600),
        immutable: Bool = false,
        prefetchFraction: Double = 0.75,
        refreshRetryInterval: Duration = .seconds(5)
    ) {
        precondition(capacity > 0, "DNS cache capacity must be positive")
        precondition(minTTL <= maxTTL, "DNS cache minTTL must not exceed maxTTL")
        precondition(prefetchFraction > 0 && prefetchFraction <= 1, "prefetchFraction must be in (0, 1]")
        self.minTTL = minTTL
        self.maxTTL = maxTTL
        self.negativeTTLCap = negativeTTLCap
        self.capacity = capacity
        self.maxStale = maxStale
        self.immutable = immutable
        self.prefetchFraction = prefetchFraction
        self.refreshRetryInterval = refreshRetryInterval
    }

    /// The TTL an answer is actually cached for.
    func clamp(_ ttl: Duration) -> Duration {
        min(max(ttl, minTTL), maxTTL)
    }

    /// How long a negative answer is cached: the service's value when shorter than the cap.
    func negativeTTL(for failure: ResolveFailure) -> Duration {
        min(failure.negativeTTL ?? negativeTTLCap, negativeTTLCap)
    }
}
