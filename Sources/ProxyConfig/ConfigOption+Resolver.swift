import NIOCore

/// The HTTPDNS resolver's options: provider, service, credentials, cache.
extension ConfigOption {
    // MARK: HTTPDNS resolver

    public static let provider = ConfigOption(
        name: "provider", valueName: "name",
        help: "Where DNS answers come from: json (DoH JSON, Alibaba Public DNS by default), doh (RFC 8484), alibaba (Alibaba Cloud HTTPDNS), tencent (Tencent Cloud HTTPDNS), static (a domain list), system (the OS resolver only)",
        defaultText: "json", expectation: "expected one of: system, alibaba, json, doh, static, tencent"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.provider = try ProviderKind(parsing: single(items))
    }
    .table(.resolver, .resolverService, \.provider,
        example: "doh",
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
    .table(.resolver, .resolverService, \.resolverURL, default: "per provider", inForce: InForce.resolverURL,
        example: "https://doh.example.com/dns-query",
        doc: "Resolver URL: the endpoint for `json` (`https://dns.alidns.com/resolve`) and `doh` (`https://dns.alidns.com/dns-query`), the service root for `alibaba` (`https://resolvers.httpdns.aliyuncs.com`), the `/d` endpoint for `tencent` (`https://119.29.29.99/d` in https mode, `http://119.29.29.98/d` in http mode).")

    public static let resolverIP = ConfigOption(
        name: "resolver-ip", valueName: "ip",
        help: "Bootstrap IP the resolver URL's host is pinned to, so no system DNS is needed to reach it; repeatable (default per provider, e.g. 223.5.5.5,223.6.6.6 for json)",
        defaultText: "none", expectation: "expected IP addresses like 223.5.5.5 or 2400:3200::1",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.resolverIPs = try ipAddresses(items)
    }
    .table(.resolver, .resolverService, \.resolverIPs, default: "per provider", inForce: InForce.resolverIPs,
        example: "192.0.2.53,2001:db8::53",
        doc: "Bootstrap IPs the resolver URL's host is pinned to (`json`/`doh`: 223.5.5.5, 223.6.6.6; `alibaba`: six service IPs). Flag repeatable (or comma-separated); env comma-separated; YAML list.")

    public static let accountID = ConfigOption(
        name: "account-id", valueName: "id",
        help: "Alibaba Cloud HTTPDNS account ID (required for provider alibaba)",
        defaultText: "none", expectation: "expected an account id like 139450"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.accountID = try identifier(single(items))
    }
    .table(.resolver, .resolverService, \.accountID,
        example: "139450",
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
        example: "5e6f7a8b9c0d1e2f",
        doc: "Secret, never logged: Alibaba Cloud HTTPDNS signing secret (v1: `sign_d` requests, any text; v2: the hex secret key, HMAC-SHA256); unset uses the unsigned interface.")

    public static let alibabaAPI = ConfigOption(
        name: "alibaba-api", valueName: "version",
        help: "Alibaba Cloud HTTPDNS API for provider alibaba: v2 (/v2/d, HMAC-SHA256 signature, optional AES, service-IP scheduling) or v1 (/{account}/d, MD5 signature)",
        defaultText: "v2", expectation: "expected one of: v1, v2"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.alibabaAPI = try keyword(single(items), as: AlibabaAPI.self)
    }
    .table(.resolver, .resolverService, \.alibabaAPI,
        example: "v1",
        doc: "Alibaba Cloud HTTPDNS API for `alibaba`: `v2` (`/v2/d`, service-IP scheduling) or `v1` (`/{account-id}/d`).")

    public static let alibabaEncryption = ConfigOption(
        name: "alibaba-encryption", valueName: "mode",
        help: "Encrypt Alibaba v2 questions and answers with aes-key: none, cbc (AES-128-CBC) or gcm (AES-128-GCM)",
        defaultText: "none", expectation: "expected one of: none, cbc, gcm"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.alibabaEncryption = try keyword(single(items), as: AlibabaEncryption.self)
    }
    .table(.resolver, .resolverService, \.alibabaEncryption, default: "`none`",
        example: "gcm",
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
        example: "000102030405060708090a0b0c0d0e0f",
        doc: "Secret, never logged: the Alibaba Cloud HTTPDNS AES key, 32 hex digits (AES-128), for `alibaba-encryption` `cbc` or `gcm`.")

    public static let schedulerRefresh = durationOrZeroOption(
        "scheduler-refresh", default: "1h",
        help: "How often Alibaba v2 asks the bootstrap IPs for the current service IPs (/ss); 0: only at start, after a failed rotation and after a network change"
    ) { $0.schedulerRefresh = $1 }
    .table(.resolver, .resolverService, \.schedulerRefresh,
        example: "10m",
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
        example: "123456", needs: ["doh-access-key-id", "doh-access-key-secret"],
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
        example: "LTAI-example", needs: ["doh-uid", "doh-access-key-secret"],
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
        example: "change-me-too", needs: ["doh-uid", "doh-access-key-id"],
        doc: "Secret, never logged: Alibaba Public DNS AccessKey secret for signed `json` requests.")

    public static let dohTimestampUnit = ConfigOption(
        name: "doh-timestamp-unit", valueName: "unit",
        help: "Unit of the signature timestamp for signed json requests: seconds or milliseconds",
        defaultText: "seconds", expectation: "expected one of: seconds, milliseconds"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.dohTimestampUnit = try keyword(single(items), as: DoHTimestampUnit.self)
    }
    .table(.resolver, .resolverService, \.dohTimestampUnit,
        example: "milliseconds",
        doc: "Unit of the signature's `ts`: `seconds` or `milliseconds`.")

    public static let dohMethod = ConfigOption(
        name: "doh-method", valueName: "method",
        help: "HTTP method for provider doh: get or post",
        defaultText: "get", expectation: "expected one of: get, post"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.dohMethod = try keyword(single(items), as: DoHMethod.self)
    }
    .table(.resolver, .resolverService, \.dohMethod,
        example: "post",
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
        example: "/etc/httpdns-proxy/domains.json",
        doc: "Domain list for `static` (required there): an http(s) URL, or else a file path. A file must exist and be JSON at start (exit 64 otherwise); SIGHUP and `POST /reload` read it again; skipped entries are logged with their line.")

    public static let staticRefresh = durationOption(
        "static-refresh", default: "300s",
        help: "How often the static list is fetched or read again"
    ) { $0.staticRefresh = $1 }
    .table(.resolver, .restart, \.staticRefresh,
        example: "1m",
        doc: "How often the static list is fetched or read again.")

    public static let resolverTimeout = durationOption(
        "resolver-timeout", default: "3s",
        help: "Limit for one request to the resolver service"
    ) { $0.resolverTimeout = $1 }
    .table(.resolver, .resolverService, \.resolverTimeout,
        example: "2s",
        doc: "Limit for one request to the resolver service.")

    public static let resolverCAFile = pathOption(
        "resolver-ca-file",
        help: "Extra CA certificates (PEM) trusted for the resolver service, e.g. a private one"
    ) { $0.resolverCAFile = $1 }
    .table(.resolver, .resolverService, \.resolverCAFile,
        example: "/etc/httpdns-proxy/resolver-ca.pem",
        doc: "Extra CA certificates (PEM) trusted for the resolver service, e.g. a private one. Loaded at start and reload as libcurl loads it: an unreadable file or one OpenSSL cannot load stops the proxy (or refuses the reload; `config check` says why) instead of failing every query.")

    public static let ipFamily = ConfigOption(
        name: "ip-family", valueName: "family",
        help: "Address families to resolve: ipv4, ipv6, both, or auto (those this host has a non-loopback address for)",
        defaultText: "auto", expectation: "expected one of: ipv4, ipv6, both, auto"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.ipFamily = try keyword(single(items), as: IPFamily.self)
    }
    .table(.resolver, .resolverFamily, \.ipFamily,
        example: "ipv4",
        doc: "`ipv4`, `ipv6`, `both`, or `auto` (the families this host has a non-loopback address for).")

    public static let minTTL = durationOrZeroOption(
        "min-ttl", default: "0",
        help: "Cache answers at least this long; 0 honours the service's TTL"
    ) { $0.minTTL = $1 }
    .table(.resolver, .resolverCache, \.minTTL,
        example: "10s",
        doc: "Cache answers at least this long; `0` honours the service's TTL.")

    public static let maxTTL = durationOption(
        "max-ttl", default: "3600s",
        help: "Cache answers at most this long (at least min-ttl)"
    ) { $0.maxTTL = $1 }
    .table(.resolver, .resolverCache, \.maxTTL,
        example: "2h",
        doc: "Cache answers at most this long; must be at least `min-ttl`.")

    public static let negativeTTL = durationOption(
        "negative-ttl", default: "30s",
        help: "Cache NXDOMAIN and no-data answers at most this long"
    ) { $0.negativeTTL = $1 }
    .table(.resolver, .resolverCache, \.negativeTTL,
        example: "10s",
        doc: "Cap for caching NXDOMAIN and no-data answers.")

    public static let maxStale = durationOrZeroOption(
        "max-stale", default: "1h",
        help: "Serve an expired answer for up to this long while the resolver fails; 0 disables serve-stale"
    ) { $0.maxStale = $1 }
    .table(.resolver, .resolverCache, \.maxStale,
        example: "30m",
        doc: "Serve an expired answer for up to this long while the resolver fails; `0` disables serve-stale.")

    public static let cacheSize = ConfigOption(
        name: "cache-size", valueName: "count",
        help: "Maximum number of cached names",
        defaultText: "10000", expectation: "expected a whole number 1...10000000"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.cacheSize = try integer(single(items), in: 1...10_000_000)
    }
    .table(.resolver, .resolverCache, \.cacheSize,
        example: "50000",
        doc: "Maximum number of cached names, 1-10000000.")

    public static let systemFallback = ConfigOption(
        name: "system-fallback", valueName: "bool",
        help: "Use the system resolver when HTTPDNS has no answer (error, timeout, NXDOMAIN); false = HTTPDNS only (the local resolver is never asked)",
        defaultText: "true", expectation: "expected true or false (also yes/no, 1/0)",
        isBoolean: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.systemFallback = try boolean(single(items))
    }
    .table(.resolver, .resolverCache, \.systemFallback,
        example: "false",
        doc: "When HTTPDNS has no answer (error, timeout, NXDOMAIN, empty), resolve with the system resolver (getaddrinfo). `false`: HTTPDNS only, the local resolver is never asked for an answer to use (for networks whose DNS is hijacked); `compare-system-dns` still asks it, in the background and only to compare.")

    public static let cacheImmutable = ConfigOption(
        name: "cache-immutable", valueName: "bool",
        help: "Keep cached answers until evicted, ignoring TTL expiry: true or false (a bare --cache-immutable means true)",
        defaultText: "false", expectation: "expected true or false (also yes/no, 1/0)",
        isBoolean: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.cacheImmutable = try boolean(single(items))
    }
    .table(.resolver, .resolverCache, \.cacheImmutable,
        example: "true",
        doc: "Keep cached answers until evicted, ignoring TTL expiry. Boolean; a bare `--cache-immutable` means `true`.")

    public static let cacheFile = pathOption(
        "cache-file",
        help: "Save the DNS cache to this file and load it at start, so a restart starts warm"
    ) { $0.cacheFile = $1 }
    .table(.resolver, .restart, \.cacheFile,
        example: "/var/lib/httpdns-proxy/cache.json",
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
        example: "api.example.com",
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
        example: "www.example.com,api.example.com",
        doc: "Host names resolved at start; comma-separated or a YAML list.")
}
