import ProxyConfig

/// `/summary`: what an operator asks after the fact — which build, up how long, with what
/// configuration (secrets redacted), how close to its limits, and what the traffic since the
/// start added up to. The admin page's overview is drawn from it.
package struct AdminSummary: Sendable, Encodable, Equatable {
    package struct Connections: Sendable, Encodable, Equatable {
        /// Admitted client connections open now, tunnels included.
        package var open: Int
        /// `--max-connections` as in force (derived from the open-file limit when 0).
        package var max: Int
        package var maxPerClient: Int
        /// CONNECT tunnels and upgraded connections open now; each is one of `open` and counts
        /// against the same limits (there is no separate tunnel limit).
        package var tunnels: Int

        package init(open: Int, max: Int, maxPerClient: Int, tunnels: Int) {
            self.open = open
            self.max = max
            self.maxPerClient = maxPerClient
            self.tunnels = tunnels
        }
    }

    package struct Requests: Sendable, Encodable, Equatable {
        /// Answered requests and tunnels.
        package var total: Int
        /// "2xx", "3xx", "4xx", "5xx": answers by status class since the start.
        package var byClass: [String: Int]
        /// Requests the client left before any answer.
        package var noAnswer: Int
        package var bytesUp: Int
        package var bytesDown: Int
    }

    /// Total time of forwarded requests since the start (tunnels not included), from a bounded
    /// histogram: a percentile is at most 10 % above the true value; nil before the first request.
    package struct Latency: Sendable, Encodable, Equatable {
        package var count: Int
        package var p50Ms: Double?
        package var p90Ms: Double?
        package var p99Ms: Double?
        package var maxMs: Double?
    }

    /// The same values and sources `config check` prints.
    package typealias Setting = EffectiveSetting

    package var version: String
    /// ISO 8601 UTC.
    package var startedAt: String
    package var uptimeSeconds: Int
    package var connections: Connections
    package var requests: Requests
    package var latency: Latency
    /// The configuration in force (after any reload), every option with where its value came
    /// from, secrets shown as `<redacted>`: `config check`'s report.
    package var configuration: [Setting]

    package static func requests(_ tally: TrafficTally) -> Requests {
        var byClass: [String: Int] = [:]
        for (name, count) in zip(ProxyMetrics.codeClasses, tally.statusClasses) { byClass[name] = count }
        return Requests(
            total: tally.statusClasses.reduce(0, +), byClass: byClass, noAnswer: tally.noAnswer, bytesUp: tally.bytesUp,
            bytesDown: tally.bytesDown)
    }

    package static func latency(_ histogram: LatencyHistogram) -> Latency {
        Latency(
            count: histogram.count, p50Ms: histogram.percentile(0.5), p90Ms: histogram.percentile(0.9),
            p99Ms: histogram.percentile(0.99), maxMs: histogram.count > 0 ? histogram.maxMs : nil)
    }

    package init(version: String, startedAt: String, uptimeSeconds: Int, connections: Connections, requests: Requests, latency: Latency, configuration: [Setting]) {
        self.version = version
        self.startedAt = startedAt
        self.uptimeSeconds = uptimeSeconds
        self.connections = connections
        self.requests = requests
        self.latency = latency
        self.configuration = configuration
    }
}
