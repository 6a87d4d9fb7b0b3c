import CoreMetrics

/// The resolver's Prometheus-facing counters, recorded through swift-metrics (the executable
/// bootstraps the backend; without one they cost nothing). Every handle is made once, here, for
/// the bounded label values only: never a name or an address.
public final class ResolverMetrics: Sendable {
    /// How a resolve request was answered.
    public enum Lookup: Int, Sendable, CaseIterable {
        case hit, stale, miss, negative, coalesced

        var label: String {
            switch self {
            case .hit: "hit"
            case .stale: "stale"
            case .miss: "miss"
            case .negative: "negative"
            case .coalesced: "coalesced"
            }
        }
    }

    /// The label of a query's outcome: `ok`, or the failure kind's bounded description.
    static let queryResults = ["ok"] + ResolveFailure.Kind.all.map(\.description)

    private let lookups: [Counter]
    private let queries: [String: Counter]
    private let queryDuration: Timer
    private let fallbacks: [String: Counter]
    private let cacheEntries: Gauge

    /// The reasons a fallback to system DNS is counted with.
    public static let fallbackReasons = ["no_answer", "all_addresses_failed"]

    public init(provider: String, factory: any MetricsFactory = MetricsSystem.factory) {
        lookups = Lookup.allCases.map {
            Counter(label: "httpdns_proxy_resolve_requests_total", dimensions: [("result", $0.label)], factory: factory)
        }
        var queries: [String: Counter] = [:]
        for result in Self.queryResults {
            queries[result] = Counter(
                label: "httpdns_proxy_resolver_queries_total", dimensions: [("provider", provider), ("result", result)], factory: factory)
        }
        self.queries = queries
        queryDuration = Timer(label: "httpdns_proxy_resolver_query_duration_seconds", dimensions: [("provider", provider)], factory: factory)
        var fallbacks: [String: Counter] = [:]
        for reason in Self.fallbackReasons {
            fallbacks[reason] = Counter(label: "httpdns_proxy_resolver_fallbacks_total", dimensions: [("reason", reason)], factory: factory)
        }
        self.fallbacks = fallbacks
        cacheEntries = Gauge(label: "httpdns_proxy_cache_entries", factory: factory)
    }

    public func lookup(_ kind: Lookup) {
        lookups[kind.rawValue].increment()
    }

    func query(_ result: Result<ResolvedAnswer, ResolveFailure>, rtt: Duration) {
        let label: String
        switch result {
        case .success: label = "ok"
        case .failure(let failure): label = failure.kind.description
        }
        queries[label]?.increment()
        queryDuration.recordNanoseconds(Int64(rtt.components.seconds) * 1_000_000_000 + rtt.components.attoseconds / 1_000_000_000)
    }

    func fallback(reason: String) {
        fallbacks[reason]?.increment()
    }

    public func setCacheEntries(_ count: Int) {
        cacheEntries.record(count)
    }
}
