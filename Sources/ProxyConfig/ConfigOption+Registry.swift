import NIOCore

/// The option table. `all` is grouped as `--help` shows it (`HelpGroup` order, then the order
/// here): the order of the help, the docs table, the description and the reload answer.
extension ConfigOption {
    public static let all: [ConfigOption] = HelpGroup.allCases.flatMap { group in registry.filter { $0.group == group } }

    private static let registry: [ConfigOption] = [
        config, listen, adminListen, pacProxy, pacBypass,
        provider, resolverURL, resolverIP, resolverToken, accountID, secret, alibabaAPI, alibabaEncryption, aesKey, schedulerRefresh,
        dohUID, dohAccessKeyID, dohAccessKeySecret, dohTimestampUnit, dohMethod,
        tencentMode, tencentID, tencentToken, tencentKey, tencentAlg, tencentECSIP,
        staticList, staticRefresh, resolverTimeout, resolverCAFile, ipFamily, systemFallback, systemDNSDomain, hostsFile,
        minTTL, maxTTL, negativeTTL, maxStale, cacheSize, cacheImmutable, cacheFile,
        keepaliveDomains, preload,
        connectPorts, allowDestination, route, parentProxy, parentResolve, parentDown, parentCAFile,
        allowClient, proxyAuth, proxyAuthRealm, maxConnections, maxConnectionsPerClient,
        caFile, tlsUpgrade, spkiPins,
        logLevel, logFormat, accessLog, accessLogFormat, accessLogReferer, requestIDHeader, metrics, networkMonitor,
        connectTimeout, ipBackoff, ipBackoffMax, upstreamTimeout, headerTimeout, clientIdleTimeout, tunnelIdleTimeout,
        poolMaxIdle, poolIdleTimeout, shutdownGrace, via, threads,
        compareSystemDNS, compareRate, probeDomains,
        socksListen, listenSOCKS, socksSniff, tlsListen, tlsCert, tlsKey, tlsClientCA,
        transparentListen, transparentFallback, transparentPeekTimeout, transparentHelloTimeout, outboundMark,
        dnsListen, dnsForwardZone, dnsUpstream, dnsRateLimit, dnsQueryLog, dnsCacheSize, dnsCacheMinTTL, dnsCacheMaxTTL, dohListen, dohToken, fallbackProvider, fallbackResolverURL, fallbackResolverIP,
    ]

    static let durationExpectation = "expected a duration like 500ms, 3s, 1.5s, 5m or 1h (a bare number means seconds)"
    static let hostPortExpectation = "expected host:port like 127.0.0.1:8080, [::1]:8080 or localhost:8080"

    /// A timeout option; all durations share syntax and the "> 0" rule.
    static func durationOption(
        _ name: String, default defaultText: String, help: String,
        set: @escaping @Sendable (inout ProxyConfiguration, TimeAmount) -> Void
    ) -> ConfigOption {
        ConfigOption(
            name: name, valueName: "duration", help: help, defaultText: defaultText,
            expectation: durationExpectation
        ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
            set(&config, try duration(single(items)))
        }
    }

    public static let config = ConfigOption(
        name: "config", valueName: "path",
        help: "YAML config file with the same keys as these flags (flags and environment override it)",
        defaultText: "none", expectation: "expected a file path",
        isAllowedInFile: false
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.configFile = single(items)
    }
    .table(.listening, .restart, \.configFile,
        example: "/etc/httpdns-proxy/proxy.yaml",
        doc: "Path of the YAML config file.")

    public static let listen = ConfigOption(
        name: "listen", valueName: "host:port",
        help: "Address and port the proxy listens on (port 0 picks a free port)",
        defaultText: "127.0.0.1:8080", expectation: hostPortExpectation
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.listen = try HostPort(parsing: single(items))
    }
    .table(.listening, .restart, \.listen,
        example: "0.0.0.0:3128",
        doc: "host:port the proxy listens on. An address that cannot be opened (in use, a port below 1024 without the capability, an IP the host lacks) is a configuration error (exit 64) logged in `log-format`, naming the listener, the address and what to do; the same for `admin-listen`. `0.0.0.0` with the default `allow-client` serves private networks only; on a public address also set `allow-client` and `proxy-auth` (see [Access control and limits](#access-control-and-limits)).")

    public static let adminListen = ConfigOption(
        name: "admin-listen", valueName: "host:port|off",
        help: "Address and port of the admin endpoint (health, metrics), or 'off' to disable it",
        defaultText: "127.0.0.1:8081", expectation: hostPortExpectation + ", or off"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.adminListen = try listenAddress(single(items), disabling: "the admin endpoint")
    }
    .table(.admin, .restart, \.adminListen, inForce: InForce.adminListen,
        example: "127.0.0.1:9090",
        doc: "host:port of the admin endpoint (health, metrics); `off` disables it. Must differ from `listen` unless both use port 0.")

    public static let pacProxy = ConfigOption(
        name: "pac-proxy", valueName: "host:port",
        help: "The proxy address the PAC file (/proxy.pac on the admin listener) hands out; default the listen address, or, when listening on 0.0.0.0 or [::], the host the PAC file was requested with",
        defaultText: "none", expectation: hostPortExpectation
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.pacProxy = try HostPort(parsing: single(items))
    }
    .table(.admin, .restart, \.pacProxy, default: "the listen address", inForce: InForce.pacProxy,
        example: "proxy.example.com:3128",
        doc: "host:port that `/proxy.pac` (on the admin listener) hands out as `PROXY host:port`. Unset: the listen address with its bound port; when listening on `0.0.0.0` or `[::]`, the host the PAC file was requested with (else `127.0.0.1`). See [operations](operations.md#pac-file-proxypac).")

    public static let pacBypass = ConfigOption(
        name: "pac-bypass", valueName: "pattern",
        help: "Destinations the PAC file sends DIRECT (NO_PROXY syntax, as curl reads it): example.com (or .example.com, *.example.com) for it and its subdomains, a CIDR block or IP address for IP literals, * for everything; repeatable (plain names and loopback are always DIRECT)",
        defaultText: "none", expectation: "expected domains, CIDR blocks, IP addresses or * like corp.example.com,10.0.0.0/8",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        var rules: [DestinationPattern] = []
        for item in items {
            let rule = try DestinationPattern(parsing: item)
            if !rules.contains(rule) { rules.append(rule) }
        }
        config.pacBypass = rules
    }
    .table(.admin, .restart, \.pacBypass,
        example: "intranet.example.com,.corp.example.com,10.0.0.0/8",
        doc: "Destinations the PAC file sends `DIRECT`, NO_PROXY syntax as curl reads it: `example.com`, `.example.com` or `*.example.com` (that domain and all its subdomains), a CIDR block or IP address (IP-literal destinations only; names are never resolved for it), `*` (everything). Plain names (no dot) and loopback always go `DIRECT`. Flag repeatable (or comma-separated); env comma-separated; YAML list.")

    /// A duration option where 0 is allowed and means "off" / "no floor".
    static func durationOrZeroOption(
        _ name: String, default defaultText: String, help: String,
        set: @escaping @Sendable (inout ProxyConfiguration, TimeAmount) -> Void
    ) -> ConfigOption {
        ConfigOption(
            name: name, valueName: "duration", help: help, defaultText: defaultText,
            expectation: durationExpectation + ", or 0"
        ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
            set(&config, try durationOrZero(single(items)))
        }
    }

    /// A file path option.
    static func pathOption(
        _ name: String, help: String,
        set: @escaping @Sendable (inout ProxyConfiguration, String) -> Void
    ) -> ConfigOption {
        ConfigOption(
            name: name, valueName: "path", help: help, defaultText: "none", expectation: "expected a file path"
        ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
            set(&config, try path(single(items)))
        }
    }

    /// Sets one part of the DoH signature; the loader checks that all three parts end up set.
    static func updateSignature(_ config: inout ProxyConfiguration, _ change: (inout DoHSignature) -> Void) {
        var signature = config.dohSignature ?? DoHSignature(uid: "", accessKeyID: "", accessKeySecret: "")
        change(&signature)
        config.dohSignature = signature
    }
}
