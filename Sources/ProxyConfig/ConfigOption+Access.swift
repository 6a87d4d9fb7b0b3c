import NIOCore

/// Hijack detection, access control and limits, upstream TLS.
extension ConfigOption {
    // MARK: Hijack detection and address probing

    public static let compareSystemDNS = ConfigOption(
        name: "compare-system-dns", valueName: "bool",
        help: "Also ask the system resolver, in the background, for names HTTPDNS answered and record disagreements (admin /audit): true or false (a bare --compare-system-dns means true)",
        defaultText: "false", expectation: "expected true or false (also yes/no, 1/0)",
        isBoolean: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.compareSystemDNS = try boolean(single(items))
    }
    .table(.admin, .restart, \.compareSystemDNS,
        example: "true",
        doc: "Also ask the system resolver, in the background, for names HTTPDNS answered and record disagreements (admin `/audit`, `/stats`, log, metrics). Boolean; a bare `--compare-system-dns` means `true`. Has no effect with `provider: system` or `static`. See [Hijack detection](#hijack-detection-and-address-probing).")

    public static let compareRate = ConfigOption(
        name: "compare-rate", valueName: "per-second",
        help: "System resolver lookups per second at most for compare-system-dns (0.01 to 100; 0.2 is one every 5 s)",
        defaultText: "1", expectation: "expected a number 0.01...100 like 1 or 0.2"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let text = single(items)
        guard text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let rate = Double(text), (0.01...100).contains(rate) else {
            throw .malformedValue(reason: "expected a number 0.01...100 like 1 or 0.2")
        }
        config.compareRate = rate
    }
    .table(.admin, .restart, \.compareRate,
        example: "0.2",
        doc: "System resolver lookups per second at most for `compare-system-dns`, 0.01-100 (`0.2`: one every 5 s).")

    public static let probeDomains = ConfigOption(
        name: "probe-domains", valueName: "host[:port]",
        help: "Comma-separated host names (optionally :port, default 443) whose addresses are TCP-probed after each new answer, so the first connection goes to the fastest live address",
        defaultText: "none", expectation: "expected HOST or HOST:PORT entries like api.example.com,cdn.example.com:8443",
        isList: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        var targets: [ProbeTarget] = []
        for item in items {
            let target = try ProbeTarget(parsing: item)
            if !targets.contains(target) { targets.append(target) }
        }
        config.probeDomains = targets
    }
    .table(.upstream, .restart, \.probeDomains,
        example: "api.example.com,cdn.example.com:8443",
        doc: "`HOST` or `HOST:PORT` (default port 443) entries whose addresses are TCP-probed after each new HTTPDNS answer (at most once per TTL), so the first connection goes to the fastest live address; comma-separated or a YAML list.")

    public static let connectPorts = ConfigOption(
        name: "connect-ports", valueName: "ports",
        help: "Comma-separated ports that CONNECT tunnels may target",
        defaultText: "443", expectation: "expected a list of ports 1...65535 like 443,8443",
        isList: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.connectPorts = try ports(items)
    }
    .table(.access, .live, \.connectPorts,
        example: "443,8443",
        doc: "Ports CONNECT tunnels may target; comma-separated or a YAML list.")

    public static let allowDestination = ConfigOption(
        name: "allow-destination", valueName: "cidr",
        help: "Permit dialling this block although the SSRF guard denies it (e.g. 10.0.0.0/8); repeatable",
        defaultText: "none", expectation: "expected CIDR blocks like 10.0.0.0/8 or fd00::/8",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.allowDestinations = try cidrs(items)
    }
    .table(.access, .live, \.allowDestinations,
        example: "10.20.0.0/16,fd00:1234::/32",
        doc: "CIDR blocks exempt from the destination policy. Flag repeatable (or comma-separated); env comma-separated; YAML list.")

    // MARK: Access control and limits

    public static let allowClient = ConfigOption(
        name: "allow-client", valueName: "cidr",
        help: "Client address block allowed to use the proxy; others get 403 before their request is read; repeatable (the list replaces the default)",
        defaultText: ClientACL.defaultText,
        expectation: "expected CIDR blocks like 10.0.0.0/8 or fd00::/8",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.allowClients = try cidrs(items)
    }
    .table(.access, .live, \.allowClients, default: "loopback, RFC 1918, CGNAT, link-local, ULA",
        example: "10.0.0.0/8,192.168.0.0/16",
        doc: "CIDR blocks of the clients allowed to use the proxy; others get 403 before their request is read. Replaces the default. Flag repeatable (or comma-separated); env comma-separated; YAML list.")

    public static let proxyAuth = ConfigOption(
        name: "proxy-auth", valueName: "user:pass|@file",
        help: "Require Basic proxy authentication: USER:PASS, or @FILE for an htpasswd file of bcrypt, sha-crypt or yescrypt hashes; repeatable (a password with a comma needs the file)",
        defaultText: "none", expectation: "expected USER:PASS or @HTPASSWD_FILE",
        isList: true, isRepeatable: true, isSecret: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        var sources: [ProxyAuthSource] = []
        for item in items {
            sources.append(try ProxyAuthSource(parsing: item))
        }
        config.proxyAuth = sources
    }
    .table(.access, .live, \.proxyAuth, redactsItself: true, // ProxyAuthSource shows users, not passwords
        example: "@/etc/httpdns-proxy/users.htpasswd",
        doc: "Secret, never logged: require Basic proxy authentication; `USER:PASS` or `@FILE` (htpasswd of bcrypt, sha-crypt or yescrypt hashes). Flag repeatable (or comma-separated); env comma-separated; YAML list.")

    public static let proxyAuthRealm = ConfigOption(
        name: "proxy-auth-realm", valueName: "text",
        help: "Realm named in the Proxy-Authenticate challenge",
        defaultText: "httpdns-proxy", expectation: "expected 1-64 printable ASCII characters without '\"' or '\\'"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let text = single(items)
        guard (1...64).contains(text.utf8.count), text.utf8.allSatisfy({ (0x20...0x7E).contains($0) && $0 != 0x22 && $0 != 0x5C }) else {
            throw .malformedValue(reason: "expected 1-64 printable ASCII characters without '\"' or '\\'")
        }
        config.proxyAuthRealm = text
    }
    .table(.access, .live, \.proxyAuthRealm,
        example: "corp-proxy",
        doc: "Realm of the `Proxy-Authenticate` challenge; 1-64 printable ASCII characters without `\"` or `\\`.")

    public static let maxConnections = ConfigOption(
        name: "max-connections", valueName: "count",
        help: "Open client connections at most; beyond it 503 and close; 0 = (open-file limit - 128) / 2, at least 16",
        defaultText: "0", expectation: "expected a whole number 0...10000000"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.maxConnections = try integer(single(items), in: 0...10_000_000)
    }
    .table(.limits, .live, \.maxConnections,
        example: "4096",
        doc: "Open client connections at most; `0` = (open-file limit − 128) / 2, at least 16. Beyond: 503 + `Retry-After`.")

    public static let maxConnectionsPerClient = ConfigOption(
        name: "max-connections-per-client", valueName: "count",
        help: "Open client connections from one client IP at most (loopback clients are exempt: in a sidecar they are the app itself); beyond it 503 and close",
        defaultText: "256", expectation: "expected a whole number 1...10000000"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.maxConnectionsPerClient = try integer(single(items), in: 1...10_000_000)
    }
    .table(.limits, .live, \.maxConnectionsPerClient,
        example: "64",
        doc: "Open client connections from one client IP at most; loopback clients (127.0.0.0/8, ::1: the sidecar's own app) are exempt and held to `--max-connections` only. Beyond: 503 + `Retry-After`.")

    // MARK: Upstream TLS

    public static let caFile = pathOption(
        "ca-file",
        help: "Extra trust anchors (PEM) for upstream TLS, in addition to the system store"
    ) { $0.caFile = $1 }
    .table(.upstream, .live, \.caFile,
        example: "/etc/httpdns-proxy/upstream-ca.pem",
        doc: "Extra trust anchors (PEM) for upstream TLS, in addition to the system store. Read at start: an unreadable file or one without certificates stops the proxy.")

    public static let tlsUpgrade = ConfigOption(
        name: "tls-upgrade", valueName: "host[:port]",
        help: "Send plain-http requests for HOST (port 80) over TLS to port 443, or for HOST:PORT over TLS to PORT; *.example.com matches one label; repeatable",
        defaultText: "none", expectation: "expected HOST or HOST:PORT like api.example.com, *.example.com or api.example.com:8080",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.tlsUpgrade = try tlsUpgradeRules(items)
    }
    .table(.upstream, .live, \.tlsUpgrade,
        example: "legacy.example.com,*.internal.example.com:8080",
        doc: "`HOST` (http port 80 sent over TLS to 443) or `HOST:PORT` (sent over TLS to PORT); `*.example.com` matches one label. Flag repeatable (or comma-separated); env comma-separated; YAML list.")

    public static let spkiPins = ConfigOption(
        name: "spki-pins", valueName: "mapping",
        help: "Config file only: host to list of base64 SHA-256 SPKI pins, checked on upstream TLS",
        defaultText: "none", expectation: "expected a mapping of host names to lists of base64 SHA-256 pins"
    ) { (config: inout ProxyConfiguration, entries: [MappingEntry]) throws(ConfigurationError) in
        config.spkiPins = try pinMapping(entries)
    }
    .table(.upstream, .live, \.spkiPins, show: { pins in
        "[" + pins.keys.sorted().map { "\($0): [" + pins[$0]!.joined(separator: ", ") + "]" }.joined(separator: ", ") + "]"
    },
        example: "{legacy.example.com: [47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=, ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=]}",
        doc: "Mapping from host (or `*.` wildcard) to base64 SHA-256 SPKI pins for upstream TLS.")
}
