/// What `CachingResolver.cached(_:)` found without doing any I/O.
public enum CacheHit: Sendable, Equatable {
    case fresh(ResolvedAnswer, remaining: Duration)
    /// Expired `age` ago; a background refresh has been queued.
    case stale(ResolvedAnswer, age: Duration)
    /// The name is known not to resolve (NXDOMAIN / no data), until the negative entry expires.
    case negative(ResolveFailure)
}
