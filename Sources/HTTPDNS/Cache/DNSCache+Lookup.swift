extension DNSCache {
    /// What the cache knows about a name.
    public enum Lookup: Sendable, Equatable {
        /// Within its TTL.
        case fresh(ResolvedAnswer, remaining: Duration)
        /// Expired `age` ago but still inside `maxStale` (or the cache is immutable): usable while the
        /// caller refreshes it.
        case stale(ResolvedAnswer, age: Duration)
        /// The name is known not to resolve.
        case negative(ResolveFailure)
        case miss
    }
}
