import NIOCore

/// The option table. Order here is the order of `--help` and of the docs table.
extension ConfigOption {
    public static let all: [ConfigOption] = [
        config, listen, adminListen, pacProxy, pacBypass,
        provider, resolverURL, resolverIP, accountID, secret, alibabaAPI, alibabaEncryption, aesKey, schedulerRefresh,
        dohUID, dohAccessKeyID, dohAccessKeySecret, dohTimestampUnit, dohMethod,
        tencentMode, tencentID, tencentToken, tencentKey, tencentAlg, tencentECSIP,
        staticList, staticRefresh, resolverTimeout, resolverCAFile, ipFamily, systemFallback, systemDNSDomain,
        minTTL, maxTTL, negativeTTL, maxStale, cacheSize, cacheImmutable, cacheFile,
        keepaliveDomains, preload,
        connectPorts, allowDestination,
        allowClient, proxyAuth, proxyAuthRealm, maxConnections, maxConnectionsPerClient,
        caFile, tlsUpgrade, spkiPins,
        logLevel, logFormat, accessLog, accessLogFormat, requestIDHeader, metrics, networkMonitor,
        connectTimeout, ipBackoff, ipBackoffMax, upstreamTimeout, headerTimeout, clientIdleTimeout, tunnelIdleTimeout,
        poolMaxIdle, poolIdleTimeout, shutdownGrace, via, threads,
        compareSystemDNS, compareRate, probeDomains,
        transparentListen, transparentFallback, transparentPeekTimeout, outboundMark,
        dnsListen, dnsForwardZone, dnsUpstream, dnsRateLimit, dohListen, dohToken, fallbackProvider, fallbackResolverURL,
        resolverToken,
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

    public static let listen = ConfigOption(
        name: "listen", valueName: "host:port",
        help: "Address and port the proxy listens on (port 0 picks a free port)",
        defaultText: "127.0.0.1:8080", expectation: hostPortExpectation
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.listen = try HostPort(parsing: single(items))
    }

    public static let adminListen = ConfigOption(
        name: "admin-listen", valueName: "host:port|off",
        help: "Address and port of the admin endpoint (health, metrics), or 'off' to disable it",
        defaultText: "127.0.0.1:8081", expectation: hostPortExpectation + ", or off"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let text = single(items)
        if text == "off" {
            config.adminListen = nil
            return
        }
        do {
            config.adminListen = try HostPort(parsing: text)
        } catch {
            throw .malformedValue(reason: "\(error) (or 'off' to disable the admin endpoint)")
        }
    }

    public static let pacProxy = ConfigOption(
        name: "pac-proxy", valueName: "host:port",
        help: "The proxy address the PAC file (/proxy.pac on the admin listener) hands out; default the listen address, or, when listening on 0.0.0.0 or [::], the host the PAC file was requested with",
        defaultText: "none", expectation: hostPortExpectation
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.pacProxy = try HostPort(parsing: single(items))
    }

    public static let pacBypass = ConfigOption(
        name: "pac-bypass", valueName: "pattern",
        help: "Destinations the PAC file sends DIRECT (NO_PROXY syntax, as curl reads it): example.com (or .example.com, *.example.com) for it and its subdomains, a CIDR block or IP address for IP literals, * for everything; repeatable (plain names and loopback are always DIRECT)",
        defaultText: "none", expectation: "expected domains, CIDR blocks, IP addresses or * like corp.example.com,10.0.0.0/8",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        var rules: [PACBypassRule] = []
        for item in items {
            let rule = try PACBypassRule(parsing: item)
            if !rules.contains(rule) { rules.append(rule) }
        }
        config.pacBypass = rules
    }

    /// A duration option where 0 is allowed and means "off" / "no floor".
    private static func durationOrZeroOption(
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
    private static func pathOption(
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
    private static func updateSignature(_ config: inout ProxyConfiguration, _ change: (inout DoHSignature) -> Void) {
        var signature = config.dohSignature ?? DoHSignature(uid: "", accessKeyID: "", accessKeySecret: "")
        change(&signature)
        config.dohSignature = signature
    }

    // MARK: HTTPDNS resolver

    public static let provider = ConfigOption(
        name: "provider", valueName: "name",
        help: "Where DNS answers come from: json (DoH JSON, Alibaba Public DNS by default), doh (RFC 8484), alibaba (Alibaba Cloud HTTPDNS), tencent (Tencent Cloud HTTPDNS), static (a domain list), system (the OS resolver only)",
        defaultText: "json", expectation: "expected one of: system, alibaba, json, doh, static, tencent"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.provider = try ProviderKind(parsing: single(items))
    }

    public static let resolverURL = ConfigOption(
        name: "resolver-url", valueName: "url",
        help: "Resolver service URL: for alibaba the service root, for json/doh/tencent the endpoint (default per provider, e.g. https://dns.alidns.com/resolve for json)",
        defaultText: "none", expectation: "expected an http or https URL like https://dns.example.com/dns-query"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let text = single(items)
        _ = try HTTPServiceURL(parsing: text)
        config.resolverURL = text
    }

    public static let resolverIP = ConfigOption(
        name: "resolver-ip", valueName: "ip",
        help: "Bootstrap IP the resolver URL's host is pinned to, so no system DNS is needed to reach it; repeatable (default per provider, e.g. 223.5.5.5,223.6.6.6 for json)",
        defaultText: "none", expectation: "expected IP addresses like 223.5.5.5 or 2400:3200::1",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.resolverIPs = try ipAddresses(items)
    }

    public static let accountID = ConfigOption(
        name: "account-id", valueName: "id",
        help: "Alibaba Cloud HTTPDNS account ID (required for provider alibaba)",
        defaultText: "none", expectation: "expected an account id like 139450"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.accountID = try identifier(single(items))
    }

    public static let secret = ConfigOption(
        name: "secret", valueName: "secret",
        help: "Alibaba Cloud HTTPDNS secret for signed requests (never logged; prefer the environment or the file)",
        defaultText: "none", expectation: "expected non-empty text without control characters",
        isSecret: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.secret = try secretText(single(items))
    }

    public static let alibabaAPI = ConfigOption(
        name: "alibaba-api", valueName: "version",
        help: "Alibaba Cloud HTTPDNS API for provider alibaba: v2 (/v2/d, HMAC-SHA256 signature, optional AES, service-IP scheduling) or v1 (/{account}/d, MD5 signature)",
        defaultText: "v2", expectation: "expected one of: v1, v2"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.alibabaAPI = try keyword(single(items), as: AlibabaAPI.self)
    }

    public static let alibabaEncryption = ConfigOption(
        name: "alibaba-encryption", valueName: "mode",
        help: "Encrypt Alibaba v2 questions and answers with aes-key: none, cbc (AES-128-CBC) or gcm (AES-128-GCM)",
        defaultText: "none", expectation: "expected one of: none, cbc, gcm"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.alibabaEncryption = try keyword(single(items), as: AlibabaEncryption.self)
    }

    public static let aesKey = ConfigOption(
        name: "aes-key", valueName: "hex",
        help: "Alibaba Cloud HTTPDNS AES key for alibaba-encryption cbc or gcm, 32 hex digits (never logged; prefer the environment or the file)",
        defaultText: "none", expectation: "expected 32 hex digits (an AES-128 key)",
        isSecret: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let text = single(items)
        guard text.utf8.count == 32, text.allSatisfy({ $0.isASCII && $0.isHexDigit }) else {
            throw .malformedValue(reason: "expected 32 hex digits (an AES-128 key)")
        }
        config.aesKey = text
    }

    public static let schedulerRefresh = durationOrZeroOption(
        "scheduler-refresh", default: "1h",
        help: "How often Alibaba v2 asks the bootstrap IPs for the current service IPs (/ss); 0: only at start, after a failed rotation and after a network change"
    ) { $0.schedulerRefresh = $1 }

    public static let dohUID = ConfigOption(
        name: "doh-uid", valueName: "id",
        help: "Alibaba Public DNS account ID for signed json requests (with doh-access-key-id and doh-access-key-secret)",
        defaultText: "none", expectation: "expected an account id like 12345"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let uid = try identifier(single(items))
        updateSignature(&config) { $0.uid = uid }
    }

    public static let dohAccessKeyID = ConfigOption(
        name: "doh-access-key-id", valueName: "id",
        help: "Alibaba Public DNS AccessKey ID for signed json requests",
        defaultText: "none", expectation: "expected an AccessKey ID"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let id = try identifier(single(items))
        updateSignature(&config) { $0.accessKeyID = id }
    }

    public static let dohAccessKeySecret = ConfigOption(
        name: "doh-access-key-secret", valueName: "secret",
        help: "Alibaba Public DNS AccessKey secret for signed json requests (never logged)",
        defaultText: "none", expectation: "expected non-empty text without control characters",
        isSecret: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let secret = try secretText(single(items))
        updateSignature(&config) { $0.accessKeySecret = secret }
    }

    public static let dohTimestampUnit = ConfigOption(
        name: "doh-timestamp-unit", valueName: "unit",
        help: "Unit of the signature timestamp for signed json requests: seconds or milliseconds",
        defaultText: "seconds", expectation: "expected one of: seconds, milliseconds"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.dohTimestampUnit = try keyword(single(items), as: DoHTimestampUnit.self)
    }

    public static let dohMethod = ConfigOption(
        name: "doh-method", valueName: "method",
        help: "HTTP method for provider doh: get or post",
        defaultText: "get", expectation: "expected one of: get, post"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.dohMethod = try keyword(single(items), as: DoHMethod.self)
    }

    public static let staticList = ConfigOption(
        name: "static-list", valueName: "url|path",
        help: "Domain list for provider static: an http(s) URL or a file path (required for static)",
        defaultText: "none", expectation: "expected an http(s) URL or a file path"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let text = single(items)
        _ = try StaticListSource(parsing: text)
        config.staticList = text
    }

    public static let staticRefresh = durationOption(
        "static-refresh", default: "300s",
        help: "How often the static list is fetched or read again"
    ) { $0.staticRefresh = $1 }

    public static let resolverTimeout = durationOption(
        "resolver-timeout", default: "3s",
        help: "Limit for one request to the resolver service"
    ) { $0.resolverTimeout = $1 }

    public static let resolverCAFile = pathOption(
        "resolver-ca-file",
        help: "Extra CA certificates (PEM) trusted for the resolver service, e.g. a private one"
    ) { $0.resolverCAFile = $1 }

    public static let ipFamily = ConfigOption(
        name: "ip-family", valueName: "family",
        help: "Address families to resolve: ipv4, ipv6, both, or auto (those this host has a non-loopback address for)",
        defaultText: "auto", expectation: "expected one of: ipv4, ipv6, both, auto"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.ipFamily = try keyword(single(items), as: IPFamily.self)
    }

    public static let minTTL = durationOrZeroOption(
        "min-ttl", default: "0",
        help: "Cache answers at least this long; 0 honours the service's TTL"
    ) { $0.minTTL = $1 }

    public static let maxTTL = durationOption(
        "max-ttl", default: "3600s",
        help: "Cache answers at most this long (at least min-ttl)"
    ) { $0.maxTTL = $1 }

    public static let negativeTTL = durationOption(
        "negative-ttl", default: "30s",
        help: "Cache NXDOMAIN and no-data answers at most this long"
    ) { $0.negativeTTL = $1 }

    public static let maxStale = durationOrZeroOption(
        "max-stale", default: "1h",
        help: "Serve an expired answer for up to this long while the resolver fails; 0 disables serve-stale"
    ) { $0.maxStale = $1 }

    public static let cacheSize = ConfigOption(
        name: "cache-size", valueName: "count",
        help: "Maximum number of cached names",
        defaultText: "10000", expectation: "expected a whole number 1...10000000"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.cacheSize = try integer(single(items), in: 1...10_000_000)
    }

    public static let systemFallback = ConfigOption(
        name: "system-fallback", valueName: "bool",
        help: "Use the system resolver when HTTPDNS has no answer (error, timeout, NXDOMAIN); false = HTTPDNS only (the local resolver is never asked)",
        defaultText: "true", expectation: "expected true or false (also yes/no, 1/0)"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.systemFallback = try boolean(single(items))
    }

    public static let cacheImmutable = ConfigOption(
        name: "cache-immutable", valueName: "bool",
        help: "Keep cached answers until evicted, ignoring TTL expiry: true or false (a bare --cache-immutable means true)",
        defaultText: "false", expectation: "expected true or false (also yes/no, 1/0)"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.cacheImmutable = try boolean(single(items))
    }

    public static let cacheFile = pathOption(
        "cache-file",
        help: "Save the DNS cache to this file and load it at start, so a restart starts warm"
    ) { $0.cacheFile = $1 }

    public static let keepaliveDomains = ConfigOption(
        name: "keepalive-domains", valueName: "names",
        help: "Comma-separated host names kept fresh in the background (refreshed at 75% of their TTL)",
        defaultText: "none", expectation: "expected host names like www.example.com,api.example.com",
        isList: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.keepaliveDomains = try domainNames(items)
    }

    public static let preload = ConfigOption(
        name: "preload", valueName: "names",
        help: "Comma-separated host names resolved at start",
        defaultText: "none", expectation: "expected host names like www.example.com,api.example.com",
        isList: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.preload = try domainNames(items)
    }

    // MARK: Hijack detection and address probing

    public static let compareSystemDNS = ConfigOption(
        name: "compare-system-dns", valueName: "bool",
        help: "Also ask the system resolver, in the background, for names HTTPDNS answered and record disagreements (admin /audit): true or false (a bare --compare-system-dns means true)",
        defaultText: "false", expectation: "expected true or false (also yes/no, 1/0)"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.compareSystemDNS = try boolean(single(items))
    }

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

    public static let connectPorts = ConfigOption(
        name: "connect-ports", valueName: "ports",
        help: "Comma-separated ports that CONNECT tunnels may target",
        defaultText: "443", expectation: "expected a list of ports 1...65535 like 443,8443",
        isList: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.connectPorts = try ports(items)
    }

    public static let allowDestination = ConfigOption(
        name: "allow-destination", valueName: "cidr",
        help: "Permit dialling this block although the SSRF guard denies it (e.g. 10.0.0.0/8); repeatable",
        defaultText: "none", expectation: "expected CIDR blocks like 10.0.0.0/8 or fd00::/8",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.allowDestinations = try cidrs(items)
    }

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

    public static let maxConnections = ConfigOption(
        name: "max-connections", valueName: "count",
        help: "Open client connections at most; beyond it 503 and close; 0 = (open-file limit - 128) / 2, at least 16",
        defaultText: "0", expectation: "expected a whole number 0...10000000"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.maxConnections = try integer(single(items), in: 0...10_000_000)
    }

    public static let maxConnectionsPerClient = ConfigOption(
        name: "max-connections-per-client", valueName: "count",
        help: "Open client connections from one client IP at most (loopback clients are exempt: in a sidecar they are the app itself); beyond it 503 and close",
        defaultText: "256", expectation: "expected a whole number 1...10000000"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.maxConnectionsPerClient = try integer(single(items), in: 1...10_000_000)
    }

    // MARK: Upstream TLS

    public static let caFile = pathOption(
        "ca-file",
        help: "Extra trust anchors (PEM) for upstream TLS, in addition to the system store"
    ) { $0.caFile = $1 }

    public static let tlsUpgrade = ConfigOption(
        name: "tls-upgrade", valueName: "host[:port]",
        help: "Send plain-http requests for HOST (port 80) over TLS to port 443, or for HOST:PORT over TLS to PORT; *.example.com matches one label; repeatable",
        defaultText: "none", expectation: "expected HOST or HOST:PORT like api.example.com, *.example.com or api.example.com:8080",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.tlsUpgrade = try tlsUpgradeRules(items)
    }

    public static let spkiPins = ConfigOption(
        name: "spki-pins", valueName: "mapping",
        help: "Config file only: host to list of base64 SHA-256 SPKI pins, checked on upstream TLS",
        defaultText: "none", expectation: "expected a mapping of host names to lists of base64 SHA-256 pins"
    ) { (config: inout ProxyConfiguration, entries: [MappingEntry]) throws(ConfigurationError) in
        config.spkiPins = try pinMapping(entries)
    }

    // MARK: Logging and limits

    public static let logLevel = ConfigOption(
        name: "log-level", valueName: "level",
        help: "Minimum log level: trace, debug, info, notice, warning, error, critical",
        defaultText: "info", expectation: "expected one of: trace, debug, info, notice, warning, error, critical"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.logLevel = try keyword(single(items), as: LogLevel.self)
    }

    public static let logFormat = ConfigOption(
        name: "log-format", valueName: "format",
        help: "Log line format: json or text",
        defaultText: "json", expectation: "expected one of: json, text"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.logFormat = try keyword(single(items), as: LogFormat.self)
    }

    public static let accessLog = ConfigOption(
        name: "access-log", valueName: "stdout|off|path",
        help: "Where the access log goes: stdout, off, or a file path containing '/'",
        defaultText: "stdout", expectation: "expected stdout, off, or a file path containing '/'"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.accessLog = try AccessLogDestination(parsing: single(items))
    }

    public static let accessLogFormat = ConfigOption(
        name: "access-log-format", valueName: "json|combined|squid",
        help: "Access log line format: json (every field), combined (nginx/Apache), or squid (Squid's native)",
        defaultText: "json", expectation: "expected one of: json, combined, squid"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.accessLogFormat = try keyword(single(items), as: AccessLogFormat.self)
    }

    public static let requestIDHeader = ConfigOption(
        name: "request-id-header", valueName: "name",
        help: "Send each request's id (the access log's request_id) to the origin in this header, e.g. X-Request-Id; a valid id the client sent in it is kept",
        defaultText: "none", expectation: "expected a header field name like X-Request-Id"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let name = try single(items)
        guard !name.isEmpty, name.utf8.count <= 64,
              name.utf8.allSatisfy({ $0 < 0x80 && (Character(Unicode.Scalar($0)).isLetter || Character(Unicode.Scalar($0)).isNumber || "-_".utf8.contains($0)) })
        else { throw .malformedValue(reason: "expected a header field name like X-Request-Id (letters, digits, '-' and '_', at most 64)") }
        let reserved = ["host", "via", "connection", "content-length", "transfer-encoding", "te", "upgrade", "proxy-authorization", "max-forwards"]
        guard !reserved.contains(name.lowercased()) else {
            throw .malformedValue(reason: "\(name) is a field the proxy itself manages")
        }
        config.requestIDHeader = name
    }

    public static let metrics = ConfigOption(
        name: "metrics", valueName: "bool",
        help: "Record Prometheus metrics and serve them at the admin listener's /metrics: true or false",
        defaultText: "true", expectation: "expected true or false (also yes/no, 1/0)"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.metrics = try boolean(single(items))
    }

    public static let networkMonitor = ConfigOption(
        name: "network-monitor", valueName: "bool",
        help: "Watch the host's addresses and routes; on a real change reset per-IP health and pooled connections and refresh cached names in the background: true or false",
        defaultText: "true", expectation: "expected true or false (also yes/no, 1/0)"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.networkMonitor = try boolean(single(items))
    }

    public static let connectTimeout = durationOption(
        "connect-timeout", default: "10s",
        help: "Limit for the TCP connect to an origin, across all its addresses"
    ) { $0.connectTimeout = $1 }

    public static let ipBackoff = durationOption(
        "ip-backoff", default: "30s",
        help: "After an origin address fails (refused, timeout, reset, TLS failure, closed before answering), dial it last for this long; doubled on each further failure"
    ) { $0.ipBackoff = $1 }

    public static let ipBackoffMax = durationOption(
        "ip-backoff-max", default: "5m",
        help: "Ceiling of the doubling ip-backoff (at least ip-backoff)"
    ) { $0.ipBackoffMax = $1 }

    public static let upstreamTimeout = durationOption(
        "upstream-timeout", default: "60s",
        help: "Limit for the origin's response head, and for silence while reading its body"
    ) { $0.upstreamTimeout = $1 }

    public static let headerTimeout = durationOption(
        "header-timeout", default: "30s",
        help: "A client must send its whole request head within this, else 408"
    ) { $0.headerTimeout = $1 }

    public static let clientIdleTimeout = durationOption(
        "client-idle-timeout", default: "60s",
        help: "Close a keep-alive client connection idle between requests for this long"
    ) { $0.clientIdleTimeout = $1 }

    public static let tunnelIdleTimeout = durationOption(
        "tunnel-idle-timeout", default: "300s",
        help: "Close a CONNECT tunnel or upgraded connection with no bytes either way for this long"
    ) { $0.tunnelIdleTimeout = $1 }

    public static let poolMaxIdle = ConfigOption(
        name: "pool-max-idle", valueName: "count",
        help: "Idle upstream connections kept per origin per event-loop thread (0 disables pooling)",
        defaultText: "64", expectation: "expected a whole number 0 or more"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.poolMaxIdle = try integer(single(items), in: 0...Int.max)
    }

    public static let poolIdleTimeout = durationOption(
        "pool-idle-timeout", default: "30s",
        help: "Close a pooled upstream connection idle for this long"
    ) { $0.poolIdleTimeout = $1 }

    public static let shutdownGrace = durationOption(
        "shutdown-grace", default: "20s",
        help: "On SIGTERM/SIGINT, let in-flight requests finish for up to this long, then close"
    ) { $0.shutdownGrace = $1 }

    public static let via = ConfigOption(
        name: "via", valueName: "token",
        help: "Pseudonym added to Via headers and used to detect request loops (an HTTP token)",
        defaultText: "httpdns-proxy", expectation: "expected an HTTP token (no spaces or commas)"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.viaPseudonym = try token(single(items))
    }

    public static let threads = ConfigOption(
        name: "threads", valueName: "count",
        help: "Event-loop threads; 0 means one per CPU core",
        defaultText: "0", expectation: "expected a whole number 0...1024"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.threads = try integer(single(items), in: 0...1024)
    }
}
