import CoreMetrics
import ProxyUpstream

/// Counters of the background checks: the system-DNS audit (`--compare-system-dns`) and address
/// probing (`--probe-domains`). Separate from `ProxyMetrics` so the request path's handles stay as
/// they are; bounded labels only.
package final class BackgroundCheckMetrics: Sendable {
    static let probeResults = ["ok", "refused", "timeout", "other"]

    private let comparisons: Counter
    private let disagreements: [String: Counter]
    private let dropped: Counter
    private let probes: [String: Counter]

    package init(factory: any MetricsFactory = MetricsSystem.factory) {
        comparisons = Counter(label: "httpdns_proxy_system_dns_comparisons_total", factory: factory)
        disagreements = Dictionary(uniqueKeysWithValues: AnswerComparison.disagreementKinds.map {
            ($0.rawValue, Counter(label: "httpdns_proxy_system_dns_disagreements_total", dimensions: [("kind", $0.rawValue)], factory: factory))
        })
        dropped = Counter(label: "httpdns_proxy_system_dns_audit_dropped_total", factory: factory)
        probes = Dictionary(uniqueKeysWithValues: Self.probeResults.map {
            ($0, Counter(label: "httpdns_proxy_address_probes_total", dimensions: [("result", $0)], factory: factory))
        })
    }

    func compared(_ verdict: AnswerComparison) {
        comparisons.increment()
        disagreements[verdict.rawValue]?.increment()
    }

    func auditDropped() {
        dropped.increment()
    }

    /// One probe's result: nil for success, else the failure kind.
    func probed(_ failure: UpstreamFailureKind?) {
        let label: String
        switch failure {
        case nil: label = "ok"
        case .refused?: label = "refused"
        case .timeout?: label = "timeout"
        default: label = "other"
        }
        probes[label]?.increment()
    }
}
