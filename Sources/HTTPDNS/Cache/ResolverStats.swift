import NIOConcurrencyHelpers

/// Per-domain resolution counters behind one lock. Bounded: at most `maxDomains` domains get their
/// own counters; the rest share the `otherBucket` entry, so a client asking for endless random
/// names cannot grow memory without limit. Totals count everything.
public final class ResolverStats: Sendable {
    /// The shared counters of domains beyond `maxDomains`.
    public static let otherBucket = "(other)"
    /// The name carried by `totals()`.
    public static let totalName = "(total)"

    private struct Counters {
        var stats: DomainStats
        var rttSumMs: Double = 0

        init(name: String) { stats = DomainStats(name: name) }

        var snapshot: DomainStats {
            var result = stats
            result.avgResolveMs = stats.queries == 0 ? 0 : rttSumMs / Double(stats.queries)
            return result
        }
    }

    private struct State {
        var domains: [String: Counters] = [:]
        var other = Counters(name: ResolverStats.otherBucket)
        var total = Counters(name: ResolverStats.totalName)

        /// Applies `update` to the domain's counters (or the overflow bucket) and to the totals.
        mutating func update(_ name: String, maxDomains: Int, _ update: (inout Counters) -> Void) {
            update(&total)
            if let index = domains.index(forKey: name) {
                update(&domains.values[index])  // one hash lookup, updated in place
            } else if domains.count < maxDomains {
                var counters = Counters(name: name)
                update(&counters)
                domains[name] = counters
            } else {
                update(&other)
            }
        }
    }

    public let maxDomains: Int
    /// The same events as Prometheus counters (nil: none).
    public let metrics: ResolverMetrics?
    private let state = NIOLockedValueBox(State())

    /// - Parameter maxDomains: domains with their own counters; default 10,000 (the cache capacity).
    public init(maxDomains: Int = 10_000, metrics: ResolverMetrics? = nil) {
        self.maxDomains = maxDomains
        self.metrics = metrics
    }

    // Cache hits reach the statistics in batches (`recordHits`), counted by the cache; these
    // record one hit of a name that is not normalised yet.
    func recordCacheHit(_ name: String) {
        recordHits([(name.cacheKey, HitCounts(fresh: 1))])
    }

    func recordStaleHit(_ name: String) {
        recordHits([(name.cacheKey, HitCounts(stale: 1))])
    }

    func recordNegativeHit(_ name: String) {
        recordHits([(name.cacheKey, HitCounts(negative: 1))])
    }

    /// Cache hits counted by the cache itself, added in one batch (keys are cache keys).
    func recordHits(_ batch: [(name: String, hits: HitCounts)]) {
        guard !batch.isEmpty else { return }
        state.withLockedValue { state in
            for (name, hits) in batch {
                state.update(name, maxDomains: maxDomains) { counters in
                    counters.stats.cacheHits += hits.fresh
                    counters.stats.staleHits += hits.stale
                    counters.stats.negativeHits += hits.negative
                    if hits.fresh > 0 {
                        counters.stats.lastSource = "cache"
                    } else if hits.stale > 0 {
                        counters.stats.lastSource = "stale"
                    }
                }
            }
        }
    }

    /// Called before every read: moves hits that a cache counted but has not reported yet into
    /// these counters, so reads are exact although hits are reported in batches.
    private let pendingHits = NIOLockedValueBox<[@Sendable () -> Void]>([])

    func addPendingHitsSource(_ flush: @escaping @Sendable () -> Void) {
        pendingHits.withLockedValue { $0.append(flush) }
    }

    private func flushPendingHits() {
        for flush in pendingHits.withLockedValue({ $0 }) { flush() }
    }

    /// One HTTPDNS query and its outcome.
    public func recordQuery(_ name: String, rtt: Duration, result: Result<ResolvedAnswer, ResolveFailure>) {
        let ms = rtt.cacheSeconds * 1000
        metrics?.query(result, rtt: rtt)
        record(name) { counters in
            counters.stats.queries += 1
            counters.rttSumMs += ms
            counters.stats.maxResolveMs = max(counters.stats.maxResolveMs, ms)
            switch result {
            case .success:
                counters.stats.successes += 1
                counters.stats.lastSource = "httpdns"
            case .failure(let failure):
                if failure.kind == .timeout { counters.stats.timeouts += 1 }
                counters.stats.errorsByKind[failure.kind.description, default: 0] += 1
            }
        }
    }

    /// HTTPDNS had no usable answer and the connector used system DNS instead.
    /// `reason`: one of `ResolverMetrics.fallbackReasons`.
    public func recordFallback(_ name: String, reason: String = "no_answer") {
        metrics?.fallback(reason: reason)
        record(name) { counters in
            counters.stats.fallbacksToSystem += 1
            counters.stats.lastSource = "system"
        }
    }

    /// One comparison of an HTTPDNS answer with the system resolver's (the system-DNS audit).
    public func recordSystemComparison(_ name: String, disagreed: Bool) {
        record(name) { counters in
            counters.stats.systemChecks += 1
            if disagreed { counters.stats.systemDisagreements += 1 }
        }
    }

    /// Per-domain counters, sorted by name, with the overflow bucket last when it was used.
    public func snapshot() -> [DomainStats] {
        flushPendingHits()
        return state.withLockedValue { state in
            var result = state.domains.values.map(\.snapshot).sorted { $0.name < $1.name }
            if state.other.stats != DomainStats(name: Self.otherBucket) {
                result.append(state.other.snapshot)
            }
            return result
        }
    }

    /// Every domain's counters added up (`maxResolveMs` is the overall maximum).
    public func totals() -> DomainStats {
        flushPendingHits()
        return state.withLockedValue { $0.total.snapshot }
    }

    public func reset() {
        flushPendingHits()
        state.withLockedValue { $0 = State() }
    }

    private func record(_ name: String, _ update: (inout Counters) -> Void) {
        let key = name.cacheKey
        state.withLockedValue { $0.update(key, maxDomains: maxDomains, update) }
    }
}
