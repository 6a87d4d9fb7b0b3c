import NIOCore

/// The proxy's validated settings, produced by `ConfigurationLoader`.
///
/// The option registry (`ConfigOption.all`) says which flag, environment variable and
/// config-file key set each field, and states its default; `ProxyConfiguration.defaults` is those
/// defaults parsed. A field's initial value below is no default but `.placeholder` (optionals:
/// nil), so a default is written in one place only, the entry; "Default ..." in a field's comment
/// repeats the entry's for the reader. Fields are `var` so code and tests can start from
/// `defaults` and change what they need; values set that way are not validated.
///
/// `description`, `debugDescription` and the mirror (`dump`) never show
/// `secret`, `aesKey`, `dohSignature.accessKeySecret` or `tencent`'s token and key, so logging a configuration is safe.
public struct ProxyConfiguration: Sendable, Equatable {
    /// Where the proxy listens. Default 127.0.0.1:8080: loopback only, so a
    /// fresh install is not an open proxy.
    public var listen: HostPort = .placeholder
    /// Where the admin endpoint (health, metrics) listens; `nil` when set to `off`.
    /// Default 127.0.0.1:8081.
    public var adminListen: HostPort?
    /// The `PROXY host:port` the PAC file (`/proxy.pac`) hands out; nil means the proxy's listen
    /// address (with its bound port), or the host the PAC file was requested with when the proxy
    /// listens on a wildcard address (0.0.0.0, ::). Default nil.
    public var pacProxy: HostPort?
    /// Destinations the PAC file sends `DIRECT`, besides plain host names and loopback. Default [].
    public var pacBypass: [DestinationPattern] = .placeholder
    /// The DNS source. Default `.json` (Alibaba Public DNS), with system DNS as fallback.
    public var provider: ProviderKind = .placeholder
    /// The resolver service: for `alibaba` the service root (paths are appended), for
    /// `json`/`doh` the full endpoint URL. nil means the provider's default; see
    /// `effectiveResolverURL`. Validated as an http(s) URL with a host. Default nil.
    public var resolverURL: String?
    /// Bootstrap IPs the resolver URL's host is pinned to, so finding the resolver
    /// needs no system DNS. Empty means the provider's defaults; see `effectiveResolverIPs`. Default [].
    public var resolverIPs: [IPAddress] = .placeholder
    /// Alibaba Cloud HTTPDNS account ID; required for `alibaba`. Default nil.
    public var accountID: String?
    /// Alibaba Cloud HTTPDNS signing secret (`sign_d` requests); nil uses the unsigned
    /// interface. Never shown in descriptions or errors. Default nil.
    public var secret: String?
    /// Which Alibaba Cloud HTTPDNS API to call. Default `.v2`.
    public var alibabaAPI: AlibabaAPI = .placeholder
    /// How Alibaba v2 requests carry the question: in the clear or AES-128 encrypted. Default `.none`.
    public var alibabaEncryption: AlibabaEncryption = .placeholder
    /// The account's AES key (32 hex digits, AES-128) for `alibabaEncryption` cbc/gcm. Never
    /// shown in descriptions or errors. Default nil.
    public var aesKey: String?
    /// How often Alibaba v2 asks for the current service IPs (`/ss`); 0 fetches them only at
    /// start, after a failed rotation and after a network change. Default 1h.
    public var schedulerRefresh: TimeAmount = .placeholder
    /// Alibaba Public DNS request signature for `json`; nil sends unsigned requests. Default nil.
    public var dohSignature: DoHSignature?
    /// Unit of the signature's timestamp. Default `.seconds`.
    public var dohTimestampUnit: DoHTimestampUnit = .placeholder
    /// HTTP method for `doh` queries. Default `.get`.
    public var dohMethod: DoHMethod = .placeholder
    /// Provider `tencent`: mode, id, token or key, cipher, ECS address. Token and key are
    /// never shown. Default `TencentSettings()` (https mode, aes, nothing set).
    public var tencent: TencentSettings = .placeholder
    /// The `static` provider's list: an http(s) URL or a file path; required for
    /// `static`. See `staticListSource`. Default nil.
    public var staticList: String?
    /// How often the static list is fetched or read again. Default 300s.
    public var staticRefresh: TimeAmount = .placeholder
    /// Limit for one request to the resolver service. Default 3s.
    public var resolverTimeout: TimeAmount = .placeholder
    /// Extra CA certificates (PEM) trusted for the resolver service, for a private one. Default nil.
    public var resolverCAFile: String?
    /// Address families to resolve and use. Default `.auto`.
    public var ipFamily: IPFamily = .placeholder
    /// Answers are cached at least this long; 0 honours the service's TTL. Default 0.
    public var minTTL: TimeAmount = .placeholder
    /// Answers are cached at most this long; at least `minTTL`. Default 3600s.
    public var maxTTL: TimeAmount = .placeholder
    /// Cap for caching NXDOMAIN and no-data answers. Default 30s.
    public var negativeTTL: TimeAmount = .placeholder
    /// An expired answer may still be served this long while the resolver fails
    /// (serve-stale); 0 disables it. Default 1h.
    public var maxStale: TimeAmount = .placeholder
    /// When HTTPDNS has no answer, ask the system resolver (getaddrinfo). Turn it off where the
    /// local resolver must never be trusted (hijacked networks). Default true.
    public var systemFallback: Bool = .placeholder
    /// Maximum cached names, 1...10,000,000. Default 10000.
    public var cacheSize: Int = .placeholder
    /// Cached answers are kept until evicted, ignoring TTL expiry. Default false.
    public var cacheImmutable: Bool = .placeholder
    /// The cache is saved to and loaded from this file, so a restart starts warm. Default nil.
    public var cacheFile: String?
    /// Names (lowercase, validated) refreshed in the background at 75 % of their TTL. Default [].
    public var keepaliveDomains: [String] = .placeholder
    /// Names (lowercase, validated) resolved at start. Default [].
    public var preload: [String] = .placeholder
    /// Ports CONNECT may target, sorted and unique. Default [443]: tunnelling
    /// to arbitrary ports would let clients reach SMTP, SSH, databases, ...
    public var connectPorts: [Int] = .placeholder
    /// Blocks exempt from the SSRF guard's denied ranges. Default [].
    public var allowDestinations: [CIDR] = .placeholder
    /// Ordered routing rules (`route`); the first match decides, none: the parent when set, else direct. Default none.
    public var routes: [RouteRule] = .placeholder
    /// The upstream HTTP proxy (`parent-proxy`); nil: none. Default nil.
    public var parentProxy: ParentProxy?
    /// Who resolves for the parent (`parent-resolve`). Default local.
    public var parentResolve: ParentResolve = .placeholder
    /// What happens when the parent is unreachable (`parent-down`). Default fail.
    public var parentDown: ParentDown = .placeholder
    /// Trust anchors (PEM) for an `https://` parent's certificate, beside the system store; nil:
    /// those of `caFile`. Default nil.
    public var parentCAFile: String?
    /// Clients allowed to connect; any other gets 403 before its request is read. Default
    /// `ClientACL.defaultBlocks` (loopback, RFC 1918, CGNAT, link-local, ULA).
    public var allowClients: [CIDR] = .placeholder
    /// Proxy authentication (Basic): credentials and htpasswd files; empty means no
    /// authentication. Passwords are never shown in descriptions. Default [].
    public var proxyAuth: [ProxyAuthSource] = .placeholder
    /// The realm of the `Proxy-Authenticate` challenge. Default "httpdns-proxy".
    public var proxyAuthRealm: String = .placeholder
    /// Open client connections at most; 0 derives it from the open-file limit (see
    /// `effectiveMaxConnections`). Default 0.
    public var maxConnections: Int = .placeholder
    /// Open client connections from one client IP at most. Default 256.
    public var maxConnectionsPerClient: Int = .placeholder
    /// Extra trust anchors (PEM) for upstream TLS, in addition to the system store. Default nil.
    public var caFile: String?
    /// Plain-http destinations that are reached over TLS; see `tlsUpgradeTarget(host:port:)`. Default [].
    public var tlsUpgrade: [TLSUpgradeRule] = .placeholder
    /// Host (lowercase; may be `*.` wildcard) to base64 SHA-256 SPKI pins (44 characters,
    /// padded); config file only. See `spkiPins(forHost:)`. Default [:].
    public var spkiPins: [String: [String]] = .placeholder
    /// Default `.info`.
    public var logLevel: LogLevel = .placeholder
    /// Default `.json`.
    public var logFormat: LogFormat = .placeholder
    /// Default `.stdout`.
    public var accessLog: AccessLogDestination = .placeholder
    /// Default `.json`.
    public var accessLogFormat: AccessLogFormat = .placeholder
    /// A request header that carries each request's id to the origin (e.g. `X-Request-Id`); a
    /// valid id the client sent in it is kept. Default nil (the id is only logged).
    public var requestIDHeader: String?
    /// Log each request's Referer as sent (it can carry tokens, as query strings do). Default false.
    public var accessLogReferer: Bool = .placeholder
    /// Record Prometheus metrics (served at the admin `/metrics`). Default true.
    public var metrics: Bool = .placeholder
    /// Watch the host's addresses and routes (netlink, else polling) and respond to a real change:
    /// per-IP health and pooled connections reset, cached names refreshed in the background. Default true.
    public var networkMonitor: Bool = .placeholder
    /// Limit for TCP connect to one origin, across all its resolved addresses. Default 10s.
    public var connectTimeout: TimeAmount = .placeholder
    /// An origin address (IP and port) that failed is dialed after every other address for this
    /// long; each further consecutive failure doubles it, up to `ipBackoffMax`. Default 30s.
    public var ipBackoff: TimeAmount = .placeholder
    /// Ceiling of the doubling back-off; at least `ipBackoff`. Default 5 min.
    public var ipBackoffMax: TimeAmount = .placeholder
    /// Limit for the origin's response head, and for the longest silence while
    /// reading a response body. Default 60s.
    public var upstreamTimeout: TimeAmount = .placeholder
    /// A client must finish sending a request head within this, else 408. Default 30s.
    public var headerTimeout: TimeAmount = .placeholder
    /// A keep-alive client connection with no request in flight is closed after this. Default 60s.
    public var clientIdleTimeout: TimeAmount = .placeholder
    /// A CONNECT tunnel or upgraded connection with no bytes either way is closed after this. Default 300s.
    public var tunnelIdleTimeout: TimeAmount = .placeholder
    /// Idle upstream connections kept per origin per event-loop thread; 0 disables pooling. Default 64.
    public var poolMaxIdle: Int = .placeholder
    /// An idle pooled upstream connection is closed after this. Default 30s.
    public var poolIdleTimeout: TimeAmount = .placeholder
    /// On SIGTERM/SIGINT: stop accepting, let in-flight requests finish within this, then close. Default 20s.
    public var shutdownGrace: TimeAmount = .placeholder
    /// Pseudonym added to Via headers and used to detect request loops; an
    /// RFC 9110 token. Default "httpdns-proxy".
    public var viaPseudonym: String = .placeholder
    /// Event-loop threads; 0 means one per CPU core (see `effectiveThreads`). Default 0.
    public var threads: Int = .placeholder
    /// The YAML file the settings were read from, if any (for start-up logs). Default nil.
    public var configFile: String?
    /// Ask the system resolver too for names HTTPDNS answered, in the background, and record where
    /// the answers disagree (admin `/audit`). Default false.
    public var compareSystemDNS: Bool = .placeholder
    /// System resolver lookups per second at most for `compareSystemDNS`. Default 1.
    public var compareRate: Double = .placeholder
    /// Names whose addresses are TCP-probed after each new answer, so the first connection goes to
    /// the fastest live address. Default [].
    public var probeDomains: [ProbeTarget] = .placeholder
    /// Names resolved only by the system resolver (`system-dns-domain`). Default: none.
    public var systemDNSDomains: SystemDNSDomains = .placeholder
    /// Where SOCKS5 and SOCKS4a clients are accepted; nil: off. Default nil.
    public var socksListen: HostPort?
    /// Whether `listen` also serves SOCKS, told apart by the first byte (`listen-socks`). Default true.
    public var listenSOCKS: Bool = .placeholder
    /// Where clients reach the proxy over TLS (`tls-listen`); nil: off. Default nil.
    public var tlsListen: HostPort?
    /// The TLS listener's certificate chain files (`tls-cert`). Default none.
    public var tlsCerts: [String] = []
    /// Their key files, in the same order (`tls-key`); empty: each certificate file holds its key. Default none.
    public var tlsKeys: [String] = []
    /// Trust anchors for client certificates on the TLS listener (`tls-client-ca`). Default none.
    public var tlsClientCA: String?
    /// Whether a SOCKS CONNECT to an address is peeked for the name it means (`socks-sniff`). Default false.
    public var socksSniff: Bool = .placeholder
    /// Local records in hosts-file format (`hosts-file`), asked before any resolver. Default nil.
    package var hostsFile: String?
    /// Where connections redirected by netfilter (REDIRECT) are accepted; nil: off. Default nil.
    public var transparentListen: HostPort?
    /// A transparent connection whose name HTTPDNS cannot answer goes to its original destination,
    /// or is refused. Default original.
    public var transparentFallback: TransparentFallback = .placeholder
    /// How long a transparent connection's first bytes (ClientHello, request head) are waited
    /// for while none has arrived; then it is relayed to its original destination as is. Default 300ms.
    public var transparentPeekTimeout: TimeAmount = .placeholder
    /// How long (from the accept) a transparent connection's ClientHello or request head that has
    /// begun is waited for; then `transparentFallback` decides. Default 5s.
    public var transparentHelloTimeout: TimeAmount = .placeholder
    /// SO_MARK put on every outbound socket (origins and the resolver), so netfilter rules can
    /// exempt the proxy's own traffic from redirection; nil: none. Default nil.
    public var outboundMark: UInt32?
    /// The DNS listener's address (`dns-listen`); nil: off (the default).
    public var dnsListen: HostPort?
    /// Names the DNS listener forwards to the upstream resolvers (`dns-forward-zone`). Default: none.
    public var dnsForwardZones: DNSForwardZones = .placeholder
    /// Where the DNS listener forwards (`dns-upstream`); empty: /etc/resolv.conf's nameservers.
    public var dnsUpstreams: [HostPort] = .placeholder
    /// DNS queries per second per client IP (`dns-rate-limit`); 0: no limit. Default 1000.
    public var dnsRateLimit: Int = .placeholder
    /// Where the DNS listener's query log goes (`off` by default).
    public var dnsQueryLog: AccessLogDestination = .placeholder
    /// Forwarded answers the DNS listener caches at most (0: none).
    public var dnsCacheSize: Int = .placeholder
    /// Floor and cap of a forwarded answer's time in the cache.
    public var dnsCacheMinTTL: TimeAmount = .placeholder
    public var dnsCacheMaxTTL: TimeAmount = .placeholder
    /// The DoH listener's address (`doh-listen`); nil: off (the default).
    public var dohListen: HostPort?
    /// The bearer token the DoH listener requires (`doh-token`); nil: none. A secret.
    public var dohToken: String?
    /// A second provider asked when the first cannot answer (`fallback-provider`); nil: none.
    public var fallbackProvider: ProviderKind?
    /// The fallback provider's URL (`fallback-resolver-url`); nil: its default.
    public var fallbackResolverURL: String?
    /// The fallback provider's bootstrap IPs (`fallback-resolver-ip`); empty: its defaults with its
    /// default URL, none (system DNS finds the URL's host) otherwise. Default [].
    public var fallbackResolverIPs: [IPAddress] = .placeholder
    /// The bearer token the doh and json providers send (`resolver-token`); nil: none. A secret,
    /// never given to the fallback provider.
    public var resolverToken: String?
    /// Where each option's value came from, as the loader applied it. Not an option: what
    /// `config check` and `/summary` show next to each value.
    public internal(set) var sources = ConfigurationSources()

    /// The defaults: every option's default text, stated once in its entry (`ConfigOption.defaultText`),
    /// parsed into its field; an option whose default is "none" keeps the field's empty value. A
    /// default text that does not parse stops the program at its first use (every test uses it).
    public static let defaults: ProxyConfiguration = {
        var config = ProxyConfiguration()
        for option in ConfigOption.all {
            option.applyDefault(to: &config)
        }
        return config
    }()

    /// Placeholders only; `defaults` is the way to a configuration.
    private init() {}

    /// `threads`, with 0 replaced by the number of CPU cores.
    public var effectiveThreads: Int {
        threads == 0 ? System.coreCount : threads
    }

    /// `maxConnections`, with 0 replaced by what the open-file limit `openFileLimit` can carry:
    /// each client connection may hold two descriptors (client and upstream), and 128 stay in
    /// reserve for listeners, the resolver, logs and pooled upstream connections. At least 16.
    public func effectiveMaxConnections(openFileLimit: Int) -> Int {
        guard maxConnections == 0 else { return maxConnections }
        return max(16, (openFileLimit - 128) / 2)
    }

    /// The SSRF guard for `allowDestinations`.
    public var destinationPolicy: DestinationPolicy {
        DestinationPolicy(allow: allowDestinations)
    }

    /// The resolver URL in use: `resolverURL`, else the provider's default
    /// (`ProviderKind.defaultResolverURL`). nil for `system` and `static`, which
    /// have no resolver service (`static` uses `staticList`).
    public var effectiveResolverURL: String? {
        switch provider {
        case .system, .static: nil
        case .alibaba, .json, .doh: resolverURL ?? provider.defaultResolverURL
        case .tencent: resolverURL ?? tencent.mode.defaultResolverURL
        }
    }

    /// The addresses to pin the resolver URL's host to:
    /// - `resolverIPs` when given (for `static`, they pin the static list URL's host);
    /// - none when the URL's host is an IP literal (nothing to look up);
    /// - else the provider's defaults when the URL's host is the default URL's host
    ///   (a custom URL with another host is found through system DNS unless
    ///   `resolverIPs` are given);
    /// - none for `system`.
    public var effectiveResolverIPs: [IPAddress] {
        switch provider {
        case .system:
            return []
        case .static:
            guard case .url(let listURL) = staticListSource, listURL.hostIPAddress == nil else { return [] }
            return resolverIPs
        case .alibaba, .json, .doh, .tencent:
            guard let text = effectiveResolverURL, let url = try? HTTPServiceURL(parsing: text),
                  url.hostIPAddress == nil
            else { return [] }
            if !resolverIPs.isEmpty { return resolverIPs }
            guard let defaultText = provider.defaultResolverURL,
                  let defaultURL = try? HTTPServiceURL(parsing: defaultText), defaultURL.host == url.host
            else { return [] }
            return provider.defaultResolverIPs
        }
    }

    /// `staticList` classified as URL or file; nil when unset or unparsable.
    public var staticListSource: StaticListSource? {
        staticList.flatMap { try? StaticListSource(parsing: $0) }
    }
}
