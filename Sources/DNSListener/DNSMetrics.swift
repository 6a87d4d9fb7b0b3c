import CoreMetrics

/// `httpdns_proxy_dns_queries_total{qtype,rcode}`: every query the DNS and DoH listeners answered.
/// Both labels are bounded: query types outside the list count as "other", and so do RCODEs.
package final class DNSMetrics: Sendable {
    static let types: [(code: UInt16, label: String)] = [
        (1, "a"), (28, "aaaa"), (5, "cname"), (15, "mx"), (2, "ns"), (12, "ptr"), (6, "soa"), (33, "srv"), (16, "txt"),
        (65, "https"), (64, "svcb"), (255, "any"),
    ]
    static let typeLabels = types.map(\.label) + ["other"]
    static let rcodes = ["noerror", "formerr", "servfail", "nxdomain", "notimp", "refused", "badvers", "other"]

    private let counters: [Counter]

    package init(factory: any MetricsFactory = MetricsSystem.factory) {
        var counters: [Counter] = []
        for type in Self.typeLabels {
            for rcode in Self.rcodes {
                counters.append(Counter(label: "httpdns_proxy_dns_queries_total", dimensions: [("qtype", type), ("rcode", rcode)], factory: factory))
            }
        }
        self.counters = counters
    }

    static func typeIndex(_ type: UInt16?) -> Int {
        guard let type else { return types.count }
        return types.firstIndex { $0.code == type } ?? types.count
    }

    static func rcodeIndex(_ rcode: UInt8) -> Int {
        switch rcode {
        case 0...5: Int(rcode)
        case 16: 6
        default: 7
        }
    }

    /// One answered query: its type (nil: unreadable) and the RCODE sent.
    func answered(type: UInt16?, rcode: UInt8) {
        counters[Self.typeIndex(type) * Self.rcodes.count + Self.rcodeIndex(rcode)].increment()
    }
}
