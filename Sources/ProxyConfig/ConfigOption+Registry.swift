import NIOCore

/// The option table. `all` is grouped as `--help` shows it (`HelpGroup` order, then the order
/// here): the order of the help, the docs table, the description and the reload answer.
extension ConfigOption {
    public static let all: [ConfigOption] = HelpGroup.allCases.flatMap { group in registry.filter { $0.group == group } }

    private static let registry: [ConfigOption] = [
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
        doc: "Path of the YAML config file.")

    public static let listen = ConfigOption(
        name: "listen", valueName: "host:port",
        help: "Address and port the proxy listens on (port 0 picks a free port)",
        defaultText: "127.0.0.1:8080", expectation: hostPortExpectation
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.listen = try HostPort(parsing: single(items))
    }
    .table(.listening, .restart, \.listen,
        doc: "host:port the proxy listens on. An address that cannot be opened (in use, a port below 1024 without the capability, an IP the host lacks) is a configuration error (exit 64) logged in `log-format`, naming the listener, the address and what to do; the same for `admin-listen`. `0.0.0.0` with the default `allow-client` serves private networks only; on a public address also set `allow-client` and `proxy-auth` (see [Access control and limits](#access-control-and-limits)).")

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
    .table(.admin, .restart, \.adminListen,
        doc: "host:port of the admin endpoint (health, metrics); `off` disables it. Must differ from `listen` unless both use port 0.")

    public static let pacProxy = ConfigOption(
        name: "pac-proxy", valueName: "host:port",
        help: "The proxy address the PAC file (/proxy.pac on the admin listener) hands out; default the listen address, or, when listening on 0.0.0.0 or [::], the host the PAC file was requested with",
        defaultText: "none", expectation: hostPortExpectation
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.pacProxy = try HostPort(parsing: single(items))
    }
    .table(.admin, .restart, \.pacProxy, default: "the listen address",
        doc: "host:port that `/proxy.pac` (on the admin listener) hands out as `PROXY host:port`. Unset: the listen address with its bound port; when listening on `0.0.0.0` or `[::]`, the host the PAC file was requested with (else `127.0.0.1`). See [operations](operations.md#pac-file-proxypac).")

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
    .table(.admin, .restart, \.pacBypass,
        doc: "Destinations the PAC file sends `DIRECT`, NO_PROXY syntax as curl reads it: `example.com`, `.example.com` or `*.example.com` (that domain and all its subdomains), a CIDR block or IP address (IP-literal destinations only; names are never resolved for it), `*` (everything). Plain names (no dot) and loopback always go `DIRECT`. Flag repeatable (or comma-separated); env comma-separated; YAML list.")

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
    .table(.resolver, .resolverService, \.provider,
        doc: "Where DNS answers come from: `json`, `doh`, `alibaba`, `tencent`, `static` or `system`; see [Resolver providers](#resolver-providers).")

    public static let resolverURL = ConfigOption(
        name: "resolver-url", valueName: "url",
        help: "Resolver service URL: for alibaba the service root, for json/doh/tencent the endpoint (default per provider, e.g. https://dns.alidns.com/resolve for json)",
        defaultText: "none", expectation: "expected an http or https URL like https://dns.example.com/dns-query"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let text = single(items)
        _ = try HTTPServiceURL(parsing: text)
        config.resolverURL = text
    }
    .table(.resolver, .resolverService, \.resolverURL, default: "per provider",
        doc: "Resolver URL: the endpoint for `json` (`https://dns.alidns.com/resolve`) and `doh` (`https://dns.alidns.com/dns-query`), the service root for `alibaba` (`https://resolvers.httpdns.aliyuncs.com`), the `/d` endpoint for `tencent` (`https://119.29.29.99/d` in https mode, `http://119.29.29.98/d` in http mode).")

    public static let resolverIP = ConfigOption(
        name: "resolver-ip", valueName: "ip",
        help: "Bootstrap IP the resolver URL's host is pinned to, so no system DNS is needed to reach it; repeatable (default per provider, e.g. 223.5.5.5,223.6.6.6 for json)",
        defaultText: "none", expectation: "expected IP addresses like 223.5.5.5 or 2400:3200::1",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.resolverIPs = try ipAddresses(items)
    }
    .table(.resolver, .resolverService, \.resolverIPs, default: "per provider",
        doc: "Bootstrap IPs the resolver URL's host is pinned to (`json`/`doh`: 223.5.5.5, 223.6.6.6; `alibaba`: six service IPs). Flag repeatable (or comma-separated); env comma-separated; YAML list.")

    public static let accountID = ConfigOption(
        name: "account-id", valueName: "id",
        help: "Alibaba Cloud HTTPDNS account ID (required for provider alibaba)",
        defaultText: "none", expectation: "expected an account id like 139450"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.accountID = try identifier(single(items))
    }
    .table(.resolver, .resolverService, \.accountID,
        doc: "Alibaba Cloud HTTPDNS account ID; required for `alibaba`.")

    public static let secret = ConfigOption(
        name: "secret", valueName: "secret",
        help: "Alibaba Cloud HTTPDNS secret for signed requests (never logged; prefer the environment or the file)",
        defaultText: "none", expectation: "expected non-empty text without control characters",
        isSecret: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.secret = try secretText(single(items))
    }
    .table(.resolver, .resolverService, \.secret,
        doc: "Secret, never logged: Alibaba Cloud HTTPDNS signing secret (v1: `sign_d` requests, any text; v2: the hex secret key, HMAC-SHA256); unset uses the unsigned interface.")

    public static let alibabaAPI = ConfigOption(
        name: "alibaba-api", valueName: "version",
        help: "Alibaba Cloud HTTPDNS API for provider alibaba: v2 (/v2/d, HMAC-SHA256 signature, optional AES, service-IP scheduling) or v1 (/{account}/d, MD5 signature)",
        defaultText: "v2", expectation: "expected one of: v1, v2"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.alibabaAPI = try keyword(single(items), as: AlibabaAPI.self)
    }
    .table(.resolver, .resolverService, \.alibabaAPI,
        doc: "Alibaba Cloud HTTPDNS API for `alibaba`: `v2` (`/v2/d`, service-IP scheduling) or `v1` (`/{account-id}/d`).")

    public static let alibabaEncryption = ConfigOption(
        name: "alibaba-encryption", valueName: "mode",
        help: "Encrypt Alibaba v2 questions and answers with aes-key: none, cbc (AES-128-CBC) or gcm (AES-128-GCM)",
        defaultText: "none", expectation: "expected one of: none, cbc, gcm"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.alibabaEncryption = try keyword(single(items), as: AlibabaEncryption.self)
    }
    .table(.resolver, .resolverService, \.alibabaEncryption, default: "`none`",
        doc: "Alibaba v2 only: `none`, `cbc` (AES-128-CBC, `m=1`) or `gcm` (AES-128-GCM, `m=2`); `cbc`/`gcm` need `aes-key`.")

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
    .table(.resolver, .resolverService, \.aesKey,
        doc: "Secret, never logged: the Alibaba Cloud HTTPDNS AES key, 32 hex digits (AES-128), for `alibaba-encryption` `cbc` or `gcm`.")

    public static let schedulerRefresh = durationOrZeroOption(
        "scheduler-refresh", default: "1h",
        help: "How often Alibaba v2 asks the bootstrap IPs for the current service IPs (/ss); 0: only at start, after a failed rotation and after a network change"
    ) { $0.schedulerRefresh = $1 }
    .table(.resolver, .resolverService, \.schedulerRefresh,
        doc: "Alibaba v2 only: how often the bootstrap IPs are asked for the current service IPs (`/ss`); `0`: only at start, after a failed rotation and after a network change.")

    public static let dohUID = ConfigOption(
        name: "doh-uid", valueName: "id",
        help: "Alibaba Public DNS account ID for signed json requests (with doh-access-key-id and doh-access-key-secret)",
        defaultText: "none", expectation: "expected an account id like 12345"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let uid = try identifier(single(items))
        updateSignature(&config) { $0.uid = uid }
    }
    .table(.resolver, .resolverService, \.dohSignature?.uid,
        doc: "Alibaba Public DNS account ID for signed `json` requests. The three `doh-` credentials are given together or not at all.")

    public static let dohAccessKeyID = ConfigOption(
        name: "doh-access-key-id", valueName: "id",
        help: "Alibaba Public DNS AccessKey ID for signed json requests",
        defaultText: "none", expectation: "expected an AccessKey ID"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let id = try identifier(single(items))
        updateSignature(&config) { $0.accessKeyID = id }
    }
    .table(.resolver, .resolverService, \.dohSignature?.accessKeyID,
        doc: "Alibaba Public DNS AccessKey ID for signed `json` requests.")

    public static let dohAccessKeySecret = ConfigOption(
        name: "doh-access-key-secret", valueName: "secret",
        help: "Alibaba Public DNS AccessKey secret for signed json requests (never logged)",
        defaultText: "none", expectation: "expected non-empty text without control characters",
        isSecret: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let secret = try secretText(single(items))
        updateSignature(&config) { $0.accessKeySecret = secret }
    }
    .table(.resolver, .resolverService, \.dohSignature?.accessKeySecret,
        doc: "Secret, never logged: Alibaba Public DNS AccessKey secret for signed `json` requests.")

    public static let dohTimestampUnit = ConfigOption(
        name: "doh-timestamp-unit", valueName: "unit",
        help: "Unit of the signature timestamp for signed json requests: seconds or milliseconds",
        defaultText: "seconds", expectation: "expected one of: seconds, milliseconds"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.dohTimestampUnit = try keyword(single(items), as: DoHTimestampUnit.self)
    }
    .table(.resolver, .resolverService, \.dohTimestampUnit,
        doc: "Unit of the signature's `ts`: `seconds` or `milliseconds`.")

    public static let dohMethod = ConfigOption(
        name: "doh-method", valueName: "method",
        help: "HTTP method for provider doh: get or post",
        defaultText: "get", expectation: "expected one of: get, post"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.dohMethod = try keyword(single(items), as: DoHMethod.self)
    }
    .table(.resolver, .resolverService, \.dohMethod,
        doc: "HTTP method for `doh`: `get` or `post`.")

    public static let staticList = ConfigOption(
        name: "static-list", valueName: "url|path",
        help: "Domain list for provider static: an http(s) URL or a file path (required for static)",
        defaultText: "none", expectation: "expected an http(s) URL or a file path"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let text = single(items)
        _ = try StaticListSource(parsing: text)
        config.staticList = text
    }
    .table(.resolver, .restart, \.staticList,
        doc: "Domain list for `static` (required there): an http(s) URL, or else a file path. A file must exist and be JSON at start (exit 64 otherwise); SIGHUP and `POST /reload` read it again; skipped entries are logged with their line.")

    public static let staticRefresh = durationOption(
        "static-refresh", default: "300s",
        help: "How often the static list is fetched or read again"
    ) { $0.staticRefresh = $1 }
    .table(.resolver, .restart, \.staticRefresh,
        doc: "How often the static list is fetched or read again.")

    public static let resolverTimeout = durationOption(
        "resolver-timeout", default: "3s",
        help: "Limit for one request to the resolver service"
    ) { $0.resolverTimeout = $1 }
    .table(.resolver, .resolverService, \.resolverTimeout,
        doc: "Limit for one request to the resolver service.")

    public static let resolverCAFile = pathOption(
        "resolver-ca-file",
        help: "Extra CA certificates (PEM) trusted for the resolver service, e.g. a private one"
    ) { $0.resolverCAFile = $1 }
    .table(.resolver, .resolverService, \.resolverCAFile,
        doc: "Extra CA certificates (PEM) trusted for the resolver service, e.g. a private one.")

    public static let ipFamily = ConfigOption(
        name: "ip-family", valueName: "family",
        help: "Address families to resolve: ipv4, ipv6, both, or auto (those this host has a non-loopback address for)",
        defaultText: "auto", expectation: "expected one of: ipv4, ipv6, both, auto"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.ipFamily = try keyword(single(items), as: IPFamily.self)
    }
    .table(.resolver, .resolverFamily, \.ipFamily,
        doc: "`ipv4`, `ipv6`, `both`, or `auto` (the families this host has a non-loopback address for).")

    public static let minTTL = durationOrZeroOption(
        "min-ttl", default: "0",
        help: "Cache answers at least this long; 0 honours the service's TTL"
    ) { $0.minTTL = $1 }
    .table(.resolver, .resolverCache, \.minTTL,
        doc: "Cache answers at least this long; `0` honours the service's TTL.")

    public static let maxTTL = durationOption(
        "max-ttl", default: "3600s",
        help: "Cache answers at most this long (at least min-ttl)"
    ) { $0.maxTTL = $1 }
    .table(.resolver, .resolverCache, \.maxTTL,
        doc: "Cache answers at most this long; must be at least `min-ttl`.")

    public static let negativeTTL = durationOption(
        "negative-ttl", default: "30s",
        help: "Cache NXDOMAIN and no-data answers at most this long"
    ) { $0.negativeTTL = $1 }
    .table(.resolver, .resolverCache, \.negativeTTL,
        doc: "Cap for caching NXDOMAIN and no-data answers.")

    public static let maxStale = durationOrZeroOption(
        "max-stale", default: "1h",
        help: "Serve an expired answer for up to this long while the resolver fails; 0 disables serve-stale"
    ) { $0.maxStale = $1 }
    .table(.resolver, .resolverCache, \.maxStale,
        doc: "Serve an expired answer for up to this long while the resolver fails; `0` disables serve-stale.")

    public static let cacheSize = ConfigOption(
        name: "cache-size", valueName: "count",
        help: "Maximum number of cached names",
        defaultText: "10000", expectation: "expected a whole number 1...10000000"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.cacheSize = try integer(single(items), in: 1...10_000_000)
    }
    .table(.resolver, .resolverCache, \.cacheSize,
        doc: "Maximum number of cached names, 1-10000000.")

    public static let systemFallback = ConfigOption(
        name: "system-fallback", valueName: "bool",
        help: "Use the system resolver when HTTPDNS has no answer (error, timeout, NXDOMAIN); false = HTTPDNS only (the local resolver is never asked)",
        defaultText: "true", expectation: "expected true or false (also yes/no, 1/0)"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.systemFallback = try boolean(single(items))
    }
    .table(.resolver, .resolverCache, \.systemFallback,
        doc: "When HTTPDNS has no answer (error, timeout, NXDOMAIN, empty), resolve with the system resolver (getaddrinfo). `false`: HTTPDNS only, the local resolver is never asked for an answer to use (for networks whose DNS is hijacked); `compare-system-dns` still asks it, in the background and only to compare.")

    public static let cacheImmutable = ConfigOption(
        name: "cache-immutable", valueName: "bool",
        help: "Keep cached answers until evicted, ignoring TTL expiry: true or false (a bare --cache-immutable means true)",
        defaultText: "false", expectation: "expected true or false (also yes/no, 1/0)"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.cacheImmutable = try boolean(single(items))
    }
    .table(.resolver, .resolverCache, \.cacheImmutable,
        doc: "Keep cached answers until evicted, ignoring TTL expiry. Boolean; a bare `--cache-immutable` means `true`.")

    public static let cacheFile = pathOption(
        "cache-file",
        help: "Save the DNS cache to this file and load it at start, so a restart starts warm"
    ) { $0.cacheFile = $1 }
    .table(.resolver, .restart, \.cacheFile,
        doc: "Save the DNS cache here and load it at start, so a restart starts warm.")

    public static let keepaliveDomains = ConfigOption(
        name: "keepalive-domains", valueName: "names",
        help: "Comma-separated host names kept fresh in the background (refreshed at 75% of their TTL)",
        defaultText: "none", expectation: "expected host names like www.example.com,api.example.com",
        isList: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.keepaliveDomains = try domainNames(items)
    }
    .table(.resolver, .restart, \.keepaliveDomains,
        doc: "Host names refreshed in the background at 75 % of their TTL; comma-separated or a YAML list.")

    public static let preload = ConfigOption(
        name: "preload", valueName: "names",
        help: "Comma-separated host names resolved at start",
        defaultText: "none", expectation: "expected host names like www.example.com,api.example.com",
        isList: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.preload = try domainNames(items)
    }
    .table(.resolver, .restart, \.preload,
        doc: "Host names resolved at start; comma-separated or a YAML list.")

    // MARK: Hijack detection and address probing

    public static let compareSystemDNS = ConfigOption(
        name: "compare-system-dns", valueName: "bool",
        help: "Also ask the system resolver, in the background, for names HTTPDNS answered and record disagreements (admin /audit): true or false (a bare --compare-system-dns means true)",
        defaultText: "false", expectation: "expected true or false (also yes/no, 1/0)"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.compareSystemDNS = try boolean(single(items))
    }
    .table(.admin, .restart, \.compareSystemDNS,
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
        doc: "Realm of the `Proxy-Authenticate` challenge; 1-64 printable ASCII characters without `\"` or `\\`.")

    public static let maxConnections = ConfigOption(
        name: "max-connections", valueName: "count",
        help: "Open client connections at most; beyond it 503 and close; 0 = (open-file limit - 128) / 2, at least 16",
        defaultText: "0", expectation: "expected a whole number 0...10000000"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.maxConnections = try integer(single(items), in: 0...10_000_000)
    }
    .table(.limits, .live, \.maxConnections,
        doc: "Open client connections at most; `0` = (open-file limit − 128) / 2, at least 16. Beyond: 503 + `Retry-After`.")

    public static let maxConnectionsPerClient = ConfigOption(
        name: "max-connections-per-client", valueName: "count",
        help: "Open client connections from one client IP at most (loopback clients are exempt: in a sidecar they are the app itself); beyond it 503 and close",
        defaultText: "256", expectation: "expected a whole number 1...10000000"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.maxConnectionsPerClient = try integer(single(items), in: 1...10_000_000)
    }
    .table(.limits, .live, \.maxConnectionsPerClient,
        doc: "Open client connections from one client IP at most; loopback clients (127.0.0.0/8, ::1: the sidecar's own app) are exempt and held to `--max-connections` only. Beyond: 503 + `Retry-After`.")

    // MARK: Upstream TLS

    public static let caFile = pathOption(
        "ca-file",
        help: "Extra trust anchors (PEM) for upstream TLS, in addition to the system store"
    ) { $0.caFile = $1 }
    .table(.upstream, .live, \.caFile,
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
        doc: "Mapping from host (or `*.` wildcard) to base64 SHA-256 SPKI pins for upstream TLS.")

    // MARK: Logging and limits

    public static let logLevel = ConfigOption(
        name: "log-level", valueName: "level",
        help: "Minimum log level: trace, debug, info, notice, warning, error, critical",
        defaultText: "info", expectation: "expected one of: trace, debug, info, notice, warning, error, critical"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.logLevel = try keyword(single(items), as: LogLevel.self)
    }
    .table(.logging, .restart, \.logLevel,
        doc: "`trace`, `debug`, `info`, `notice`, `warning`, `error` or `critical`.")

    public static let logFormat = ConfigOption(
        name: "log-format", valueName: "format",
        help: "Log line format: json or text",
        defaultText: "json", expectation: "expected one of: json, text"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.logFormat = try keyword(single(items), as: LogFormat.self)
    }
    .table(.logging, .restart, \.logFormat,
        doc: "`json` (one object per line) or `text`.")

    public static let accessLog = ConfigOption(
        name: "access-log", valueName: "stdout|off|path",
        help: "Where the access log goes: stdout, off, or a file path containing '/'",
        defaultText: "stdout", expectation: "expected stdout, off, or a file path containing '/'"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.accessLog = try AccessLogDestination(parsing: single(items))
    }
    .table(.logging, .restart, \.accessLog,
        doc: "`stdout`, `off`, or a file path containing `/` (e.g. `./access.log`). A file is opened again on SIGUSR1 and SIGHUP, for log rotation: see [operations](operations.md#log-rotation-and-signals).")

    public static let accessLogFormat = ConfigOption(
        name: "access-log-format", valueName: "json|combined|squid",
        help: "Access log line format: json (every field), combined (nginx/Apache), or squid (Squid's native)",
        defaultText: "json", expectation: "expected one of: json, combined, squid"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.accessLogFormat = try keyword(single(items), as: AccessLogFormat.self)
    }
    .table(.logging, .restart, \.accessLogFormat,
        doc: "`json` (every field), `combined` (nginx/Apache combined) or `squid` (Squid's native format); see the README's \"Logs\". Needs a restart.")

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
    .table(.logging, .live, \.requestIDHeader,
        doc: "Send each request's id (the access log's `request_id`) to the origin in this field, e.g. `X-Request-Id`; a valid id the client sent in it (1–128 of letters, digits, `-._:+/=`) is kept. Fields the proxy manages itself (Host, Via, Connection, framing) are refused. Reloadable.")

    public static let metrics = ConfigOption(
        name: "metrics", valueName: "bool",
        help: "Record Prometheus metrics and serve them at the admin listener's /metrics: true or false",
        defaultText: "true", expectation: "expected true or false (also yes/no, 1/0)"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.metrics = try boolean(single(items))
    }
    .table(.admin, .restart, \.metrics,
        doc: "Record Prometheus metrics and serve them at the admin listener's `/metrics` (see [operations.md](operations.md#metrics)); `false` records nothing and `/metrics` answers 404.")

    public static let networkMonitor = ConfigOption(
        name: "network-monitor", valueName: "bool",
        help: "Watch the host's addresses and routes; on a real change reset per-IP health and pooled connections and refresh cached names in the background: true or false",
        defaultText: "true", expectation: "expected true or false (also yes/no, 1/0)"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.networkMonitor = try boolean(single(items))
    }
    .table(.admin, .restart, \.networkMonitor,
        doc: "Watch the host's addresses and routes (netlink; where netlink is unavailable the interface addresses are read every 10 s). On a real change of the addresses: per-IP health is reset, pooled upstream connections are retired, `ip-family auto` is detected again, the provider is told, and every cached name is refreshed once in the background while its old answer is still served (see [operations.md](operations.md#network-changes)). `false` turns all of that off. Needs a restart.")

    public static let connectTimeout = durationOption(
        "connect-timeout", default: "10s",
        help: "Limit for the TCP connect to an origin, across all its addresses"
    ) { $0.connectTimeout = $1 }
    .table(.upstream, .live, \.connectTimeout,
        doc: "Limit for the TCP connect to an origin, across all its resolved addresses; also the limit for each upstream TLS handshake (`https://` URIs, `tls-upgrade`).")

    public static let ipBackoff = durationOption(
        "ip-backoff", default: "30s",
        help: "After an origin address fails (refused, timeout, reset, TLS failure, closed before answering), dial it last for this long; doubled on each further failure"
    ) { $0.ipBackoff = $1 }
    .table(.upstream, .restart, \.ipBackoff,
        doc: "An origin address (IP and port) that failed (refused, timed out, reset, TLS failure, closed before answering) is dialed after every other address of its name for this long; each further consecutive failure doubles it. A successful connect clears it. See [Connecting by IP](#connecting-by-ip).")

    public static let ipBackoffMax = durationOption(
        "ip-backoff-max", default: "5m",
        help: "Ceiling of the doubling ip-backoff (at least ip-backoff)"
    ) { $0.ipBackoffMax = $1 }
    .table(.upstream, .restart, \.ipBackoffMax,
        doc: "Ceiling of the doubling `ip-backoff`; must be at least `ip-backoff`.")

    public static let upstreamTimeout = durationOption(
        "upstream-timeout", default: "60s",
        help: "Limit for the origin's response head, and for silence while reading its body"
    ) { $0.upstreamTimeout = $1 }
    .table(.upstream, .live, \.upstreamTimeout,
        doc: "Limit for the origin's response head, and the longest silence while reading a response body.")

    public static let headerTimeout = durationOption(
        "header-timeout", default: "30s",
        help: "A client must send its whole request head within this, else 408"
    ) { $0.headerTimeout = $1 }
    .table(.limits, .live, \.headerTimeout,
        doc: "A client must finish sending its request head within this, else 408.")

    public static let clientIdleTimeout = durationOption(
        "client-idle-timeout", default: "60s",
        help: "Close a keep-alive client connection idle between requests for this long"
    ) { $0.clientIdleTimeout = $1 }
    .table(.limits, .live, \.clientIdleTimeout,
        doc: "A keep-alive client connection with no request is closed after this.")

    public static let tunnelIdleTimeout = durationOption(
        "tunnel-idle-timeout", default: "300s",
        help: "Close a CONNECT tunnel or upgraded connection with no bytes either way for this long"
    ) { $0.tunnelIdleTimeout = $1 }
    .table(.limits, .live, \.tunnelIdleTimeout,
        doc: "A CONNECT tunnel or upgraded connection with no bytes either way is closed after this.")

    public static let poolMaxIdle = ConfigOption(
        name: "pool-max-idle", valueName: "count",
        help: "Idle upstream connections kept per origin per event-loop thread (0 disables pooling)",
        defaultText: "64", expectation: "expected a whole number 0 or more"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.poolMaxIdle = try integer(single(items), in: 0...Int.max)
    }
    .table(.upstream, .restart, \.poolMaxIdle,
        doc: "Idle upstream connections kept per origin per event-loop thread; `0` disables pooling.")

    public static let poolIdleTimeout = durationOption(
        "pool-idle-timeout", default: "30s",
        help: "Close a pooled upstream connection idle for this long"
    ) { $0.poolIdleTimeout = $1 }
    .table(.upstream, .restart, \.poolIdleTimeout,
        doc: "A pooled upstream connection idle this long is closed.")

    public static let shutdownGrace = durationOption(
        "shutdown-grace", default: "20s",
        help: "On SIGTERM/SIGINT, let in-flight requests finish for up to this long, then close"
    ) { $0.shutdownGrace = $1 }
    .table(.limits, .restart, \.shutdownGrace,
        doc: "On SIGTERM/SIGINT: stop accepting, let in-flight requests finish within this, then close.")

    public static let via = ConfigOption(
        name: "via", valueName: "token",
        help: "Pseudonym added to Via headers and used to detect request loops (an HTTP token)",
        defaultText: "httpdns-proxy", expectation: "expected an HTTP token (no spaces or commas)"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.viaPseudonym = try token(single(items))
    }
    .table(.upstream, .restart, \.viaPseudonym,
        doc: "Pseudonym added to `Via` headers and used to detect request loops. Must be an HTTP token (no spaces or commas).")

    public static let threads = ConfigOption(
        name: "threads", valueName: "count",
        help: "Event-loop threads; 0 means one per CPU core",
        defaultText: "0", expectation: "expected a whole number 0...1024"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.threads = try integer(single(items), in: 0...1024)
    }
    .table(.listening, .restart, \.threads,
        doc: "Event-loop threads, 0-1024; `0` means one per CPU core.")
}
