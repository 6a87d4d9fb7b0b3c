/// The DNS listener's options (`dns-listen` and what it forwards where).
extension ConfigOption {
    public static let dnsListen = ConfigOption(
        name: "dns-listen", valueName: "host:port|off",
        help: "Serve DNS (UDP and TCP) on this address: A and AAAA from the HTTPDNS cache, everything else forwarded to the upstream resolvers; 'off' (the default) disables it",
        defaultText: "off", expectation: "expected host:port like 127.0.0.1:53 or [::1]:5353, or off"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.dnsListen = try listenAddress(single(items), disabling: "the DNS listener")
    }
    .table(.dnsListeners, .restart, \.dnsListen,
        example: "127.0.0.1:5353",
        doc: "host:port of the DNS listener (UDP and TCP on the same port; port 0 picks one free port for both): A and AAAA answered from the HTTPDNS cache, everything else forwarded; see [DNS listener](#dns-listener). Set at start.")

    public static let dnsForwardZone = ConfigOption(
        name: "dns-forward-zone", valueName: "zone[=ip:port]",
        help: "Names under this suffix (e.g. cluster.local, svc), and then also single-label names, are forwarded by the DNS listener instead of being answered from HTTPDNS: to dns-upstream, or with zone=IP[:PORT] to that zone's own resolvers (several entries per zone are tried in order); repeatable or comma-separated",
        defaultText: "none", expectation: "expected domain suffixes like cluster.local,svc, each optionally =IP[:PORT]",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.dnsForwardZones = try DNSForwardZones(parsing: items)
    }
    .table(.dnsListeners, .restart, \.dnsForwardZones,
        example: "cluster.local=10.96.0.10:53",
        doc: "Domain suffixes (`cluster.local`, `svc`) whose names, and then also every single-label name, the DNS listener forwards instead of answering from HTTPDNS (names under `system-dns-domain` are forwarded too): a bare zone to `dns-upstream`; `zone=IP` or `zone=IP:PORT` (port 53 by default) to that zone's own resolvers, several entries for one zone tried in order (one that failed waits 30 s behind the others), the most specific zone winning; a resolver that is the listener itself is left out. Set at start. Flag repeatable (or comma-separated); env comma-separated; YAML list.")

    public static let dnsUpstream = ConfigOption(
        name: "dns-upstream", valueName: "ip:port",
        help: "Upstream resolvers the DNS listener forwards to (other query types, forwarded zones, names HTTPDNS cannot answer); default (or 'resolv.conf') the nameservers of /etc/resolv.conf as read at start; repeatable or comma-separated",
        defaultText: "resolv.conf", expectation: "expected IP:PORT entries like 10.96.0.10:53 or [fd00::10]:53, or resolv.conf",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        var upstreams: [HostPort] = []
        for item in items where item != "resolv.conf" {
            let upstream = try HostPort(parsing: item)
            guard IPAddress(upstream.host) != nil, upstream.port > 0 else {
                throw .malformedValue(reason: "'\(item)' is not an IP address with a port other than 0")
            }
            if !upstreams.contains(upstream) { upstreams.append(upstream) }
        }
        config.dnsUpstreams = upstreams
    }
    .table(.dnsListeners, .restart, \.dnsUpstreams, inForce: InForce.dnsUpstreams,
        example: "10.96.0.10:53",
        doc: "`IP:PORT` resolvers the DNS listener forwards to, tried in order, each within `resolver-timeout`; the default (or `resolv.conf`) is the `nameserver` lines of /etc/resolv.conf as read at start. An upstream that is the listener itself is left out. Set at start. Flag repeatable (or comma-separated); env comma-separated; YAML list.")

    public static let dnsRateLimit = ConfigOption(
        name: "dns-rate-limit", valueName: "count",
        help: "DNS queries per second one client IP may send (bursts of as many again); beyond it the listener answers REFUSED; 0 turns the limit off",
        defaultText: "1000", expectation: "expected a whole number 0...10000000"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.dnsRateLimit = try integer(single(items), in: 0...10_000_000)
    }
    .table(.dnsListeners, .restart, \.dnsRateLimit,
        example: "500",
        doc: "DNS queries per second one client IP may send to the DNS listener, with bursts of as many again; beyond it the answer is REFUSED. 0 turns the limit off. Set at start.")

    public static let dnsQueryLog = ConfigOption(
        name: "dns-query-log", valueName: "stdout|off|path",
        help: "A JSON line per answer of the DNS and DoH listeners (client, name, type, rcode, source, time): stdout, off, or a file path containing '/'",
        defaultText: "off", expectation: "expected stdout, off, or a file path containing '/'"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.dnsQueryLog = try AccessLogDestination(parsing: single(items))
    }
    .table(.dnsListeners, .restart, \.dnsQueryLog,
        example: "/var/log/httpdns-proxy/queries.log",
        doc: "The DNS and DoH listeners' query log: one JSON line per answer with `ts`, `client`, `transport`, `name`, `type`, `rcode`, `answers`, `source` (`local`, `cache`, `stale`, `httpdns`, `forward`, `forward-cache`, `forward-stale`, `refused`) and `ms`. `stdout`, `off`, or a file path containing `/`; a file is opened again with the access log on SIGUSR1 and SIGHUP. Set at start.")

    public static let dnsCacheSize = ConfigOption(
        name: "dns-cache-size", valueName: "count",
        help: "Forwarded answers the DNS listener keeps (every type; 0 turns the forward cache off)",
        defaultText: "10000", expectation: "expected a whole number 0...10000000"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.dnsCacheSize = try integer(single(items), in: 0...10_000_000)
    }
    .table(.dnsListeners, .restart, \.dnsCacheSize,
        example: "50000",
        doc: "Answers of the upstream resolvers (forwarded questions, every type) the DNS listener caches at most; the oldest go first. `0` turns the forward cache off. Set at start.")

    public static let dnsCacheMinTTL = durationOrZeroOption(
        "dns-cache-min-ttl", default: "0",
        help: "Keep forwarded answers at least this long; 0 honours their TTL"
    ) { $0.dnsCacheMinTTL = $1 }
    .table(.dnsListeners, .restart, \.dnsCacheMinTTL,
        example: "5s",
        doc: "Keep a forwarded positive answer at least this long (its TTLs still count down from the upstream's); `0` honours the answer's TTL. Negative answers keep their SOA's TTL. Set at start.")

    public static let dnsCacheMaxTTL = durationOption(
        "dns-cache-max-ttl", default: "24h",
        help: "Keep forwarded answers at most this long"
    ) { $0.dnsCacheMaxTTL = $1 }
    .table(.dnsListeners, .restart, \.dnsCacheMaxTTL,
        example: "1h",
        doc: "Keep a forwarded answer at most this long, whatever its TTL (negative answers included). Set at start.")
}

/// The DoH listener's options.
extension ConfigOption {
    public static let dohListen = ConfigOption(
        name: "doh-listen", valueName: "host:port|off",
        help: "Serve RFC 8484 DNS-over-HTTPS (GET/POST /dns-query) and JSON (GET /resolve?name=&type=) over plain HTTP on this address, answered like the DNS listener, for per-pod proxies using --provider doh or json; 'off' (the default) disables it",
        defaultText: "off", expectation: "expected host:port like 0.0.0.0:8053, or off"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.dohListen = try listenAddress(single(items), disabling: "the DoH listener")
    }
    .table(.dnsListeners, .restart, \.dohListen,
        example: "0.0.0.0:8053",
        doc: "host:port of the DoH listener: RFC 8484 `GET/POST /dns-query` (`application/dns-message`) and JSON `GET /resolve?name=&type=A\\|AAAA` over plain HTTP, answered like the DNS listener (same cache, forwarding, `allow-client`, `dns-rate-limit` and counters), so a per-pod proxy can use `provider: doh` or `json` with `resolver-url: http://NODE:PORT/dns-query` (or `/resolve`); see [DNS listener](#dns-listener). Set at start.")

    public static let dohToken = ConfigOption(
        name: "doh-token", valueName: "token",
        help: "Bearer token the DoH listener requires (Authorization: Bearer TOKEN); default none: no token",
        defaultText: "none", expectation: "expected a token of printable characters without spaces",
        isSecret: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.dohToken = try bearerToken(single(items))
    }
    .table(.dnsListeners, .restart, \.dohToken,
        example: "change-me-three",
        doc: "Bearer token the DoH listener requires (`Authorization: Bearer TOKEN`; otherwise 401). A secret: never logged, redacted in `/summary`. Set at start.")

    /// A bearer token: printable ASCII without spaces, so it goes into a header field as is.
    static func bearerToken(_ token: String) throws(ConfigurationError) -> String {
        guard !token.isEmpty, token.utf8.count <= 4096, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .malformedValue(reason: "expected a token of printable characters without spaces")
        }
        return token
    }
}

/// A second HTTPDNS provider for when the first cannot be reached (a node tier that is down).
extension ConfigOption {
    public static let fallbackProvider = ConfigOption(
        name: "fallback-provider", valueName: "kind",
        help: "A second provider (json, doh, alibaba or tencent; its credentials are the first's options) asked when the first fails for any reason but NXDOMAIN/NODATA, e.g. the vendor behind a node tier; the first is tried again after resolver-timeout; default none (system DNS comes after both when system-fallback is on)",
        defaultText: "none", expectation: "expected one of json, doh, alibaba, tencent, or none"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let text = single(items)
        guard text != "none" else {
            config.fallbackProvider = nil
            return
        }
        guard let kind = ProviderKind(rawValue: text), ![.system, .static].contains(kind) else {
            throw .malformedValue(reason: "expected one of json, doh, alibaba, tencent, or none (system DNS is system-fallback)")
        }
        config.fallbackProvider = kind
    }
    .table(.dnsListeners, .resolverService, \.fallbackProvider,
        example: "json",
        doc: "A second provider, `json`, `doh`, `alibaba` or `tencent` (its credentials and settings are the first's options), asked when the first fails for any reason but NXDOMAIN/NODATA: for a per-pod proxy whose first provider is a node tier's `doh-listen`, the vendor itself. After a failure of the first, queries go to the second for `resolver-timeout`, then the first is tried again. Stale answers (`max-stale`) are served meanwhile as usual, and `system-fallback` still comes after both. Reloadable with the provider.")

    public static let fallbackResolverURL = ConfigOption(
        name: "fallback-resolver-url", valueName: "url",
        help: "The fallback provider's service URL (default that provider's default URL)",
        defaultText: "none", expectation: "expected an http or https URL like https://dns.example.com/resolve"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let text = single(items)
        _ = try HTTPServiceURL(parsing: text)
        config.fallbackResolverURL = text
    }
    .table(.dnsListeners, .resolverService, \.fallbackResolverURL, inForce: InForce.fallbackResolverURL,
        example: "https://dns.alidns.com/resolve",
        doc: "The fallback provider's service URL; default that provider's default URL (pinned to its default IPs then). A URL naming a host needs `fallback-resolver-ip` to be reached without system DNS. Reloadable with the provider.")

    public static let fallbackResolverIP = ConfigOption(
        name: "fallback-resolver-ip", valueName: "ip",
        help: "Bootstrap IP the fallback resolver URL's host is pinned to, so the fallback needs no system DNS either (the network it is for may have none); repeatable (default: that provider's default IPs with its default URL, none otherwise)",
        defaultText: "none", expectation: "expected IP addresses like 223.5.5.5 or 2400:3200::1",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.fallbackResolverIPs = try ipAddresses(items)
    }
    .table(.dnsListeners, .resolverService, \.fallbackResolverIPs, default: "per provider", inForce: InForce.fallbackResolverIPs,
        example: "223.5.5.5,223.6.6.6",
        doc: "Bootstrap IPs the `fallback-resolver-url` host is pinned to, as `resolver-ip` is for the first provider: the fallback is asked exactly when the network is failing, so it must not depend on system DNS. Without it a fallback URL that names a host is resolved by system DNS (its default URL uses its default IPs). Ignored when the URL's host is an IP address. Flag repeatable (or comma-separated); env comma-separated; YAML list. Reloadable with the provider.")

    public static let resolverToken = ConfigOption(
        name: "resolver-token", valueName: "token",
        help: "Bearer token the doh and json providers send (Authorization: Bearer TOKEN), e.g. a node tier's doh-token; never sent to the fallback provider; never logged",
        defaultText: "none", expectation: "expected a token of printable characters without spaces",
        isSecret: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.resolverToken = try bearerToken(single(items))
    }
    .table(.resolver, .resolverService, \.resolverToken,
        example: "change-me-four",
        doc: "Bearer token the `doh` and `json` providers send (`Authorization: Bearer TOKEN`): a node tier's `doh-token`. Printable ASCII without spaces, at most 4096 bytes. Only with `provider: doh` or `json` (another provider refuses to start with it); never sent to the `fallback-provider` (the vendor behind the node tier must not see it). A refused token (401/403) is an auth failure logged once, and the fallback provider answers. A secret: never logged, redacted in `/summary` and `config check`. Reloadable with the provider.")
}

extension ProxyConfiguration {
    /// The configuration the fallback provider is built from: this one with its provider, URL and
    /// pins (`fallback-resolver-ip`; the provider's default pins with its default URL); nil without
    /// `fallback-provider`.
    public var fallbackConfiguration: ProxyConfiguration? {
        guard let kind = fallbackProvider else { return nil }
        var second = self
        second.provider = kind
        second.resolverURL = fallbackResolverURL
        second.resolverIPs = fallbackResolverIPs
        second.fallbackProvider = nil
        second.fallbackResolverURL = nil
        second.fallbackResolverIPs = []
        // The token is the node tier's: never handed to the vendor behind it.
        second.resolverToken = nil
        return second
    }
}
