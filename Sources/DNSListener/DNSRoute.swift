import HTTPDNS
import ProxyConfig

/// Where the DNS listener takes a query: a pure decision over the parsed query and the settings,
/// so the handlers only carry it out.
struct DNSRouting: Sendable {
    enum Route: Equatable, Sendable {
        /// An A or AAAA question answered from the HTTPDNS cache (a miss resolves through it).
        case cache(name: String, family: DNSRecordType)
        /// Relayed to the upstream resolvers.
        case forward
    }

    /// `--dns-forward-zone`.
    var forwardZones: SystemDNSDomains
    /// `--system-dns-domain`: names HTTPDNS never sees are forwarded too.
    var systemOnly: SystemDNSDomains
    /// False with `--provider system`: there is no HTTPDNS cache, everything is forwarded.
    var hasCache: Bool

    func route(_ query: DNSQuery) -> Route {
        guard hasCache, query.qclass == 1, let name = query.name, !name.isEmpty,
              let family = DNSRecordType(rawValue: query.type)
        else { return .forward }
        if forwardZones.matches(name) || systemOnly.matches(name) { return .forward }
        return .cache(name: name, family: family)
    }
}
