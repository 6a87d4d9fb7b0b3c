/// `dns-forward-zone`: the zones the DNS listener forwards instead of answering from HTTPDNS, each
/// to `dns-upstream` (a bare `zone`) or to upstreams of its own (`zone=IP[:PORT]`, several entries
/// for one zone tried in order), as dnsmasq's `server=/zone/ip` and CoreDNS's `forward` per zone.
public struct DNSForwardZones: Sendable, Hashable, CustomStringConvertible {
    /// Every zone named, for matching (single-label names included once any is set).
    public private(set) var domains = SystemDNSDomains()
    /// Upstreams by zone (lowercased, no dots at the ends) for the zones that name their own.
    public private(set) var upstreams: [String: [HostPort]] = [:]

    public init() {}

    /// `items`: `cluster.local`, `corp.example=10.0.0.53`, `corp.example=[fd00::53]:5353`.
    public init(parsing items: [String]) throws(ConfigurationError) {
        var zones: [String] = []
        for item in items {
            guard let equals = item.firstIndex(of: "=") else {
                zones.append(item)
                continue
            }
            let zoneText = String(item[..<equals])
            let zone = try SystemDNSDomains(parsing: [zoneText]).suffixes.first ?? ""
            let upstream = try Self.upstream(String(item[item.index(after: equals)...]), in: item)
            zones.append(zoneText)
            if !(upstreams[zone]?.contains(upstream) ?? false) { upstreams[zone, default: []].append(upstream) }
        }
        domains = try SystemDNSDomains(parsing: zones)
    }

    /// `IP` (port 53) or `IP:PORT` / `[IPv6]:PORT`.
    static func upstream(_ text: String, in item: String) throws(ConfigurationError) -> HostPort {
        let reason = "'\(item)': after '=' give the zone's resolver as IP or IP:PORT (like 10.96.0.10 or [fd00::10]:53)"
        if let address = IPAddress(text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text) {
            return HostPort(host: address.description, port: 53)
        }
        guard let parsed = try? HostPort(parsing: text), IPAddress(parsed.host) != nil, parsed.port > 0 else {
            throw .malformedValue(reason: reason)
        }
        return parsed
    }

    public var isEmpty: Bool { domains.isEmpty }

    /// Whether the listener forwards `name` (see `SystemDNSDomains.matches`).
    public func matches(_ name: String) -> Bool { domains.matches(name) }

    /// The most specific zone with upstreams of its own that contains `name`; nil: the default
    /// upstreams (`dns-upstream`) answer it.
    public func routedZone(for name: String) -> String? {
        guard !upstreams.isEmpty else { return nil }
        var lowered = name.lowercased()
        if lowered.hasSuffix(".") { lowered.removeLast() }
        var best: String?
        for zone in upstreams.keys where DestinationPattern.domain(zone).matches(host: lowered) {
            if zone.count > (best?.count ?? -1) { best = zone }
        }
        return best
    }

    public var description: String {
        "[" + domains.suffixes.map { zone in
            guard let list = upstreams[zone] else { return zone }
            return list.map { "\(zone)=\($0.host.contains(":") ? "[\($0.host)]" : $0.host):\($0.port)" }.joined(separator: ", ")
        }.joined(separator: ", ") + "]"
    }
}
