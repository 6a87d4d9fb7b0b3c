import ProxyConfig

/// `/summary`: what an operator asks after the fact — which build, up how long, with what
/// configuration (secrets redacted), how close to its limits, and what the traffic since the
/// start added up to. The admin page's overview is drawn from it.
public struct AdminSummary: Sendable, Encodable, Equatable {
    public struct Connections: Sendable, Encodable, Equatable {
        /// Admitted client connections open now, tunnels included.
        public var open: Int
        /// `--max-connections` as in force (derived from the open-file limit when 0).
        public var max: Int
        public var maxPerClient: Int
        /// CONNECT tunnels and upgraded connections open now; each is one of `open` and counts
        /// against the same limits (there is no separate tunnel limit).
        public var tunnels: Int
    }

    public struct Requests: Sendable, Encodable, Equatable {
        /// Answered requests and tunnels.
        public var total: Int
        /// "2xx", "3xx", "4xx", "5xx": answers by status class since the start.
        public var byClass: [String: Int]
        /// Requests the client left before any answer.
        public var noAnswer: Int
        public var bytesUp: Int
        public var bytesDown: Int
    }

    /// Total time of forwarded requests since the start (tunnels not included), from a bounded
    /// histogram: a percentile is at most 10 % above the true value; nil before the first request.
    public struct Latency: Sendable, Encodable, Equatable {
        public var count: Int
        public var p50Ms: Double?
        public var p90Ms: Double?
        public var p99Ms: Double?
        public var maxMs: Double?
    }

    /// The same values and sources `config check` prints.
    public typealias Setting = EffectiveSetting

    public var version: String
    /// ISO 8601 UTC.
    public var startedAt: String
    public var uptimeSeconds: Int
    public var connections: Connections
    public var requests: Requests
    public var latency: Latency
    /// The configuration in force (after any reload), every option with where its value came
    /// from, secrets shown as `<redacted>`: `config check`'s report.
    public var configuration: [Setting]

    static func requests(_ tally: TrafficTally) -> Requests {
        var byClass: [String: Int] = [:]
        for (name, count) in zip(ProxyMetrics.codeClasses, tally.statusClasses) { byClass[name] = count }
        return Requests(
            total: tally.statusClasses.reduce(0, +), byClass: byClass, noAnswer: tally.noAnswer, bytesUp: tally.bytesUp,
            bytesDown: tally.bytesDown)
    }

    static func latency(_ histogram: LatencyHistogram) -> Latency {
        Latency(
            count: histogram.count, p50Ms: histogram.percentile(0.5), p90Ms: histogram.percentile(0.9),
            p99Ms: histogram.percentile(0.99), maxMs: histogram.count > 0 ? histogram.maxMs : nil)
    }
}
