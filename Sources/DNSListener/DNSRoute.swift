import HTTPDNS
import NIOCore
import ProxyConfig

/// Where the DNS listener takes a query: a pure decision over the parsed query and the settings,
/// so the handlers only carry it out.
struct DNSRouting: Sendable {
    enum Route: Equatable, Sendable {
        /// An A or AAAA question answered from the HTTPDNS cache (a miss resolves through it).
        case cache(name: String, family: DNSRecordType)
        /// Relayed upstream: to the zone's own resolvers (`--dns-forward-zone zone=IP`), or to the
        /// default ones (`--dns-upstream`) when nil.
        case forward(zone: String?)

        static var forward: Route { .forward(zone: nil) }
    }

    /// `--dns-forward-zone`.
    var forwardZones: DNSForwardZones
    /// `--system-dns-domain`: names HTTPDNS never sees are forwarded too.
    var systemOnly: SystemDNSDomains
    /// False with `--provider system`: there is no HTTPDNS cache, everything is forwarded.
    var hasCache: Bool

    func route(_ query: DNSQuery) -> Route {
        let zone = query.name.flatMap { forwardZones.routedZone(for: $0) }
        guard hasCache, query.qclass == 1, let name = query.name, !name.isEmpty,
              let family = DNSRecordType(rawValue: query.type)
        else { return .forward(zone: zone) }
        if forwardZones.matches(name) || systemOnly.matches(name) { return .forward(zone: zone) }
        return .cache(name: name, family: family)
    }
}
