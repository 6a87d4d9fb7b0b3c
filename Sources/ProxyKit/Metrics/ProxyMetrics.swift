import CoreMetrics
import NIOConcurrencyHelpers
import NIOCore

/// The proxy's Prometheus-facing metrics, recorded through swift-metrics (only the executable
/// bootstraps a backend). Names and labels are a contract (docs/operations.md); every handle is
/// made once, here, for bounded label values only — never a host, address, client or path.
package final class ProxyMetrics: Sendable {
    /// `kind` of a finished request or tunnel.
    enum RequestKind: Int, CaseIterable {
        case http, https, connect, upgrade, transparent
        var label: String { ["http", "https", "connect", "upgrade", "transparent"][rawValue] }
    }

    static let codeClasses = ["2xx", "3xx", "4xx", "5xx"]
    /// `reason` of request errors: every `ProxyError` kind plus the ends the client or origin
    /// causes after a response began.
    static let errorReasons = ProxyError.Kind.all.map(\.description) + AccessLogRecord.abortReasons
    static let rejectionReasons = [ProxyError.Kind.clientNotAllowed.description, ProxyError.Kind.tooManyConnections.description]
    static let connectResults = ["ok", "refused", "timeout", "tls", "other"]

    /// Histogram buckets, 100 µs to 30 s: requests and resolver queries.
    package static let durationBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30),
    ]
    /// The timers the buckets apply to (the factory is configured with them by the executable).
    package static let durationHistograms = [
        "httpdns_proxy_request_duration_seconds", "httpdns_proxy_upstream_connect_duration_seconds",
        "httpdns_proxy_resolver_query_duration_seconds",
    ]

    private let requests: [Counter]
    private let durations: [Timer]
    private let errors: [String: Counter]
    package let clientConnections: Meter
    package let tunnels: Meter
    private let rejections: [String: Counter]
    private let connectAttempts: [Counter]
    private let connectDuration: Timer
    package let poolReuses: Counter
    /// Pooled connections closed because the answer they were dialed from no longer holds.
    package let poolLeaseRetirements: Counter
    private let reloads: [Counter]
    private let buildInfo: Gauge
    private let networkChanges: Counter
    /// Transparent connections and requests whose original destination is none of HTTPDNS's
    /// addresses for their name.
    package let transparentHijacks: Counter
    /// TLS listener handshakes: completed, failed (not TLS, a bad or missing client certificate,
    /// a timeout, the client leaving first).
    private let tlsListenerHandshakes: [Counter]
    /// The TLS listener's earliest certificate expiry; made when a listener reports one, so a proxy
    /// without one exports no expiry an alert could mistake for the epoch.
    private let tlsListenerExpiry: NIOLockedValueBox<Gauge?>
    private let factory: any MetricsFactory

    package init(version: String, factory: any MetricsFactory = MetricsSystem.factory) {
        var requests: [Counter] = []
        for kind in RequestKind.allCases {
            for codeClass in Self.codeClasses {
                requests.append(
                    Counter(label: "httpdns_proxy_requests_total", dimensions: [("kind", kind.label), ("code_class", codeClass)], factory: factory))
            }
        }
        self.requests = requests
        durations = RequestKind.allCases.map {
            Timer(label: "httpdns_proxy_request_duration_seconds", dimensions: [("kind", $0.label)], factory: factory)
        }
        errors = Dictionary(uniqueKeysWithValues: Self.errorReasons.map {
            ($0, Counter(label: "httpdns_proxy_request_errors_total", dimensions: [("reason", $0)], factory: factory))
        })
        clientConnections = Meter(label: "httpdns_proxy_client_connections_active", factory: factory)
        tunnels = Meter(label: "httpdns_proxy_tunnels_active", factory: factory)
        rejections = Dictionary(uniqueKeysWithValues: Self.rejectionReasons.map {
            ($0, Counter(label: "httpdns_proxy_client_connections_rejected_total", dimensions: [("reason", $0)], factory: factory))
        })
        var attempts: [Counter] = []
        for family in ["ipv4", "ipv6"] {
            for result in Self.connectResults {
                attempts.append(
                    Counter(
                        label: "httpdns_proxy_upstream_connect_attempts_total", dimensions: [("family", family), ("result", result)],
                        factory: factory))
            }
        }
        connectAttempts = attempts
        connectDuration = Timer(label: "httpdns_proxy_upstream_connect_duration_seconds", factory: factory)
        poolReuses = Counter(label: "httpdns_proxy_upstream_pool_reuses_total", factory: factory)
        poolLeaseRetirements = Counter(label: "httpdns_proxy_upstream_pool_lease_retirements_total", factory: factory)
        reloads = ["ok", "error"].map { Counter(label: "httpdns_proxy_config_reloads_total", dimensions: [("result", $0)], factory: factory) }
        buildInfo = Gauge(label: "httpdns_proxy_build_info", dimensions: [("version", version)], factory: factory)
        buildInfo.record(1)
        networkChanges = Counter(label: "httpdns_proxy_network_changes_total", factory: factory)
        transparentHijacks = Counter(label: "httpdns_proxy_transparent_hijacks_total", factory: factory)
        tlsListenerHandshakes = ["ok", "failed"].map {
            Counter(label: "httpdns_proxy_tls_listener_handshakes_total", dimensions: [("result", $0)], factory: factory)
        }
        tlsListenerExpiry = NIOLockedValueBox(nil)
        self.factory = factory
        // Zero-valued series exist from the start, so rates and alerts see them before the first event.
        clientConnections.set(0)
        tunnels.set(0)
    }

    /// A finished request or tunnel, from its access-log record.
    package func finished(_ record: AccessLogRecord) {
        // A connection refused at accept was no request: `rejected` counted it.
        if let reason = record.errorReason, Self.rejectionReasons.contains(reason) { return }
        let kind: RequestKind
        switch record.kind {
        case .tunnel: kind = record.method == "CONNECT" ? .connect : .upgrade
        case .request: kind = record.status == 101 ? .upgrade : (record.scheme == "https" ? .https : .http)
        case .transparent: kind = .transparent
        }
        if let reason = record.errorReason { errors[reason]?.increment() }
        // A request that got no answer at all (the client left first) has no status class.
        guard record.status >= 100 else { return }
        let codeClass = min(max(record.status / 100, 2), 5) - 2
        requests[kind.rawValue * Self.codeClasses.count + codeClass].increment()
        durations[kind.rawValue].recordNanoseconds(Int64(record.totalMs * 1_000_000))
    }

    package func rejected(_ error: ProxyError) {
        rejections[error.shortDescription]?.increment()
    }

    /// One connect attempt to an origin address: its result (nil: not over yet, a TLS handshake
    /// follows) and its TCP connect time when the TCP connect succeeded.
    package func connectAttempt(ipv6: Bool, result: String?, duration: TimeAmount?) {
        if let result {
            let index = Self.connectResults.firstIndex(of: result) ?? Self.connectResults.count - 1
            connectAttempts[(ipv6 ? Self.connectResults.count : 0) + index].increment()
        }
        if let duration { connectDuration.recordNanoseconds(duration.nanoseconds) }
    }

    package func reloaded(ok: Bool) {
        reloads[ok ? 0 : 1].increment()
    }

    /// A TLS listener handshake ended: completed or not.
    package func tlsListenerHandshake(ok: Bool) {
        tlsListenerHandshakes[ok ? 0 : 1].increment()
    }

    /// The TLS listener's certificates in force expire first at `seconds` since the epoch.
    package func tlsListenerCertificatesExpire(at seconds: Int64) {
        tlsListenerExpiry.withLockedValue { gauge in
            if gauge == nil {
                gauge = Gauge(label: "httpdns_proxy_tls_listener_certificate_expiry_timestamp_seconds", factory: factory)
            }
            gauge?.record(seconds)
        }
    }

    /// The host's interface addresses changed (the network monitor).
    package func networkChanged() {
        networkChanges.increment()
    }
}
