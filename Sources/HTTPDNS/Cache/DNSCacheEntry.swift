/// One slot of a `DNSCache`. Not generic over the clock (times are offsets from the cache's epoch)
/// so that its layout is fixed and the hot path copies and compares plain values.
struct DNSCacheEntry: Sendable {
    enum Value: Sendable {
        case answer(ResolvedAnswer)
        case failure(ResolveFailure)
    }

    var name: String
    /// `nil` for a free slot.
    var value: Value?
    /// Offsets from the cache's epoch.
    var storedAt: Duration
    var expiresAt: Duration
    /// After clamping (positive) or capping (negative).
    var ttl: Duration
    /// Lookups since the answer was stored: "hot" means hit often during the current TTL.
    var hits: Int
    /// A refresh is running; keeps prefetch and stale hits from starting another one.
    var refreshing: Bool
    /// After a failed refresh, no new refresh before this offset.
    var retryAt: Duration?
    /// A one-off refresh asked for at this offset whether or not the name is hot (the host's
    /// network changed); cleared by the refresh's outcome.
    var refreshDueAt: Duration?
    /// The network changed while a refresh of this name was running: that refresh went over the
    /// old path, so its outcome re-arms `refreshDueAt` instead of clearing it.
    var refreshAgain = false
    /// Hits not yet added to the per-domain statistics (see `DNSCache.takeUnreportedHits`).
    var unreported = HitCounts()
}

/// Cache hits of one name, by kind.
public struct HitCounts: Sendable, Equatable {
    public var fresh = 0
    public var stale = 0
    public var negative = 0

    public init(fresh: Int = 0, stale: Int = 0, negative: Int = 0) {
        self.fresh = fresh
        self.stale = stale
        self.negative = negative
    }

    var isZero: Bool { fresh == 0 && stale == 0 && negative == 0 }

    mutating func add(_ other: HitCounts) {
        fresh += other.fresh
        stale += other.stale
        negative += other.negative
    }
}

/// LRU list links, kept apart from the entries so that reordering touches a small, dense array.
struct DNSCacheLink: Sendable {
    var prev: Int32
    var next: Int32
}
