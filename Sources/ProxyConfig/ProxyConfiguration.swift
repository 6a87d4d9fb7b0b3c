import NIOCore

/// The proxy's validated settings, produced by `ConfigurationLoader`.
///
/// Every field has its default in `ProxyConfiguration.defaults`; the option
/// registry (`ConfigOption.all`) says which flag, environment variable and
/// config-file key set it. Fields are `var` so code and tests can start from
/// `defaults` and change what they need; values set that way are not validated.
///
/// `description`, `debugDescription` and the mirror (`dump`) never show
/// `secret`, `aesKey`, `dohSignature.accessKeySecret` or `tencent`'s token and key, so logging a configuration is safe.
public struct ProxyConfiguration: Sendable, Equatable {
    /// Where the proxy listens. Default 127.0.0.1:8080: loopback only, so a
    /// fresh install is not an open proxy.
    public var listen: HostPort
    /// Where the admin endpoint (health, metrics) listens; `nil` when set to `off`.
    /// Default 127.0.0.1:8081.
    public var adminListen: HostPort?
    /// The `PROXY host:port` the PAC file (`/proxy.pac`) hands out; nil means the proxy's listen
    /// address (with its bound port), or the host the PAC file was requested with when the proxy
    /// listens on a wildcard address (0.0.0.0, ::). Default nil.
    public var pacProxy: HostPort?
    /// Destinations the PAC file sends `DIRECT`, besides plain host names and loopback. Default [].
    public var pacBypass: [PACBypassRule]
    /// The DNS source. Default `.json` (Alibaba Public DNS), with system DNS as fallback.
    public var provider: ProviderKind
    /// The resolver service: for `alibaba` the service root (paths are appended), for
    /// `json`/`doh` the full endpoint URL. nil means the provider's default; see
    /// `effectiveResolverURL`. Validated as an http(s) URL with a host. Default nil.
    public var resolverURL: String?
    /// Bootstrap IPs the resolver URL's host is pinned to, so finding the resolver
    /// needs no system DNS. Empty means the provider's defaults; see `effectiveResolverIPs`. Default [].
    public var resolverIPs: [IPAddress]
    /// Alibaba Cloud HTTPDNS account ID; required for `alibaba`. Default nil.
    public var accountID: String?
    /// Alibaba Cloud HTTPDNS signing secret (`sign_d` requests); nil uses the unsigned
    /// interface. Never shown in descriptions or errors. Default nil.
    public var secret: String?
    /// Which Alibaba Cloud HTTPDNS API to call. Default `.v2`.
    public var alibabaAPI: AlibabaAPI
    /// How Alibaba v2 requests carry the question: in the clear or AES-128 encrypted. Default `.none`.
    public var alibabaEncryption: AlibabaEncryption
    /// The account's AES key (32 hex digits, AES-128) for `alibabaEncryption` cbc/gcm. Never
    /// shown in descriptions or errors. Default nil.
    public var aesKey: String?
    /// How often Alibaba v2 asks for the current service IPs (`/ss`); 0 fetches them only at
    /// start, after a failed rotation and after a network change. Default 1h.
    public var schedulerRefresh: TimeAmount
    /// Alibaba Public DNS request signature for `json`; nil sends unsigned requests. Default nil.
    public var dohSignature: DoHSignature?
    /// Unit of the signature's timestamp. Default `.seconds`.
    public var dohTimestampUnit: DoHTimestampUnit
    /// HTTP method for `doh` queries. Default `.get`.
    public var dohMethod: DoHMethod
    /// Provider `tencent`: mode, id, token or key, cipher, ECS address. Token and key are
    /// never shown. Default `TencentSettings()` (https mode, aes, nothing set).
    public var tencent: TencentSettings
    /// The `static` provider's list: an http(s) URL or a file path; required for
    /// `static`. See `staticListSource`. Default nil.
    public var staticList: String?
    /// How often the static list is fetched or read again. Default 300s.
    public var staticRefresh: TimeAmount
    /// Limit for one request to the resolver service. Default 3s.
    public var resolverTimeout: TimeAmount
    /// Extra CA certificates (PEM) trusted for the resolver service, for a private one. Default nil.
    public var resolverCAFile: String?
    /// Address families to resolve and use. Default `.auto`.
    public var ipFamily: IPFamily
    /// Answers are cached at least this long; 0 honours the service's TTL. Default 0.
    public var minTTL: TimeAmount
    /// Answers are cached at most this long; at least `minTTL`. Default 3600s.
    public var maxTTL: TimeAmount
    /// Cap for caching NXDOMAIN and no-data answers. Default 30s.
    public var negativeTTL: TimeAmount
    /// An expired answer may still be served this long while the resolver fails
    /// (serve-stale); 0 disables it. Default 1h.
    public var maxStale: TimeAmount
    /// When HTTPDNS has no answer, ask the system resolver (getaddrinfo). Turn it off where the
    /// local resolver must never be trusted (hijacked networks). Default true.
    public var systemFallback: Bool
    /// Maximum cached names, 1...10,000,000. Default 10000.
    public var cacheSize: Int
    /// Cached answers are kept until evicted, ignoring TTL expiry. Default false.
    public var cacheImmutable: Bool
    /// The cache is saved to and loaded from this file, so a restart starts warm. Default nil.
    public var cacheFile: String?
    /// Names (lowercase, validated) refreshed in the background at 75 % of their TTL. Default [].
    public var keepaliveDomains: [String]
    /// Names (lowercase, validated) resolved at start. Default [].
    public var preload: [String]
    /// Ports CONNECT may target, sorted and unique. Default [443]: tunnelling
    /// to arbitrary ports would let clients reach SMTP, SSH, databases, ...
    public var connectPorts: [Int]
    /// Blocks exempt from the SSRF guard's denied ranges. Default [].
    public var allowDestinations: [CIDR]
    /// Clients allowed to connect; any other gets 403 before its request is read. Default
    /// `ClientACL.defaultBlocks` (loopback, RFC 1918, CGNAT, link-local, ULA).
    public var allowClients: [CIDR]
    /// Proxy authentication (Basic): credentials and htpasswd files; empty means no
    /// authentication. Passwords are never shown in descriptions. Default [].
    public var proxyAuth: [ProxyAuthSource]
    /// The realm of the `Proxy-Authenticate` challenge. Default "httpdns-proxy".
    public var proxyAuthRealm: String
    /// Open client connections at most; 0 derives it from the open-file limit (see
    /// `effectiveMaxConnections`). Default 0.
    public var maxConnections: Int
    /// Open client connections from one client IP at most. Default 256.
    public var maxConnectionsPerClient: Int
    /// Extra trust anchors (PEM) for upstream TLS, in addition to the system store. Default nil.
    public var caFile: String?
    /// Plain-http destinations that are reached over TLS; see `tlsUpgradeTarget(host:port:)`. Default [].
    public var tlsUpgrade: [TLSUpgradeRule]
    /// Host (lowercase; may be `*.` wildcard) to base64 SHA-256 SPKI pins (44 characters,
    /// padded); config file only. See `spkiPins(forHost:)`. Default [:].
    public var spkiPins: [String: [String]]
    /// Default `.info`.
    public var logLevel: LogLevel
    /// Default `.json`.
    public var logFormat: LogFormat
    /// Default `.stdout`.
    public var accessLog: AccessLogDestination
    /// Default `.json`.
    public var accessLogFormat: AccessLogFormat = .json
    /// A request header that carries each request's id to the origin (e.g. `X-Request-Id`); a
    /// valid id the client sent in it is kept. Default nil (the id is only logged).
    public var requestIDHeader: String? = nil
    /// Log each request's Referer as sent (it can carry tokens, as query strings do). Default false.
    public var accessLogReferer: Bool = false
    /// Record Prometheus metrics (served at the admin `/metrics`). Default true.
    public var metrics: Bool
    /// Watch the host's addresses and routes (netlink, else polling) and respond to a real change:
    /// per-IP health and pooled connections reset, cached names refreshed in the background. Default true.
    public var networkMonitor: Bool = true
    /// Limit for TCP connect to one origin, across all its resolved addresses. Default 10s.
    public var connectTimeout: TimeAmount
    /// An origin address (IP and port) that failed is dialed after every other address for this
    /// long; each further consecutive failure doubles it, up to `ipBackoffMax`. Default 30s.
    public var ipBackoff: TimeAmount
    /// Ceiling of the doubling back-off; at least `ipBackoff`. Default 5 min.
    public var ipBackoffMax: TimeAmount
    /// Limit for the origin's response head, and for the longest silence while
    /// reading a response body. Default 60s.
    public var upstreamTimeout: TimeAmount
    /// A client must finish sending a request head within this, else 408. Default 30s.
    public var headerTimeout: TimeAmount
    /// A keep-alive client connection with no request in flight is closed after this. Default 60s.
    public var clientIdleTimeout: TimeAmount
    /// A CONNECT tunnel or upgraded connection with no bytes either way is closed after this. Default 300s.
    public var tunnelIdleTimeout: TimeAmount
    /// Idle upstream connections kept per origin per event-loop thread; 0 disables pooling. Default 64.
    public var poolMaxIdle: Int
    /// An idle pooled upstream connection is closed after this. Default 30s.
    public var poolIdleTimeout: TimeAmount
    /// On SIGTERM/SIGINT: stop accepting, let in-flight requests finish within this, then close. Default 20s.
    public var shutdownGrace: TimeAmount
    /// Pseudonym added to Via headers and used to detect request loops; an
    /// RFC 9110 token. Default "httpdns-proxy".
    public var viaPseudonym: String
    /// Event-loop threads; 0 means one per CPU core (see `effectiveThreads`). Default 0.
    public var threads: Int
    /// The YAML file the settings were read from, if any (for start-up logs). Default nil.
    public var configFile: String?
    /// Ask the system resolver too for names HTTPDNS answered, in the background, and record where
    /// the answers disagree (admin `/audit`). Default false.
    public var compareSystemDNS: Bool = false
    /// System resolver lookups per second at most for `compareSystemDNS`. Default 1.
    public var compareRate: Double = 1
    /// Names whose addresses are TCP-probed after each new answer, so the first connection goes to
    /// the fastest live address. Default [].
    public var probeDomains: [ProbeTarget] = []
    /// Names resolved only by the system resolver (`system-dns-domain`). Default: none.
    public var systemDNSDomains = SystemDNSDomains()
    /// Where connections redirected by netfilter (REDIRECT) are accepted; nil: off. Default nil.
    public var transparentListen: HostPort?
    /// A transparent connection whose name HTTPDNS cannot answer goes to its original destination,
    /// or is refused. Default original.
    public var transparentFallback: TransparentFallback = .original
    /// How long a transparent connection's first bytes (ClientHello, request head) are waited
    /// for while none has arrived; then it is relayed to its original destination as is. Default 300ms.
    public var transparentPeekTimeout: TimeAmount = .milliseconds(300)
    /// How long (from the accept) a transparent connection's ClientHello or request head that has
    /// begun is waited for; then `transparentFallback` decides. Default 5s.
    public var transparentHelloTimeout: TimeAmount = .seconds(5)
    /// SO_MARK put on every outbound socket (origins and the resolver), so netfilter rules can
    /// exempt the proxy's own traffic from redirection; nil: none. Default nil.
    public var outboundMark: UInt32?
    /// The DNS listener's address (`dns-listen`); nil: off (the default).
    public var dnsListen: HostPort?
    /// Names the DNS listener forwards to the upstream resolvers (`dns-forward-zone`). Default: none.
    public var dnsForwardZones = SystemDNSDomains()
    /// Where the DNS listener forwards (`dns-upstream`); empty: /etc/resolv.conf's nameservers.
    public var dnsUpstreams: [HostPort] = []
    /// DNS queries per second per client IP (`dns-rate-limit`); 0: no limit. Default 1000.
    public var dnsRateLimit: Int = 1000
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
    public var fallbackResolverIPs: [IPAddress] = []
    /// The bearer token the doh and json providers send (`resolver-token`); nil: none. A secret,
    /// never given to the fallback provider.
    public var resolverToken: String?
    /// Where each option's value came from, as the loader applied it. Not an option: what
    /// `config check` and `/summary` show next to each value.
    public internal(set) var sources = ConfigurationSources()

    /// The documented defaults, used for every option no source sets.
    public static let defaults = ProxyConfiguration(
        listen: HostPort(host: "127.0.0.1", port: 8080),
        adminListen: HostPort(host: "127.0.0.1", port: 8081),
        pacProxy: nil,
        pacBypass: [],
        provider: .json,
        resolverURL: nil,
        resolverIPs: [],
        accountID: nil,
        secret: nil,
        alibabaAPI: .v2,
        alibabaEncryption: .none,
        aesKey: nil,
        schedulerRefresh: .hours(1),
        dohSignature: nil,
        dohTimestampUnit: .seconds,
        dohMethod: .get,
        tencent: TencentSettings(),
        staticList: nil,
        staticRefresh: .seconds(300),
        resolverTimeout: .seconds(3),
        resolverCAFile: nil,
        ipFamily: .auto,
        minTTL: .zero,
        maxTTL: .seconds(3600),
        negativeTTL: .seconds(30),
        maxStale: .hours(1),
        systemFallback: true,
        cacheSize: 10000,
        cacheImmutable: false,
        cacheFile: nil,
        keepaliveDomains: [],
        preload: [],
        connectPorts: [443],
        allowDestinations: [],
        allowClients: ClientACL.defaultBlocks,
        proxyAuth: [],
        proxyAuthRealm: "httpdns-proxy",
        maxConnections: 0,
        maxConnectionsPerClient: 256,
        caFile: nil,
        tlsUpgrade: [],
        spkiPins: [:],
        logLevel: .info,
        logFormat: .json,
        accessLog: .stdout,
        metrics: true,
        connectTimeout: .seconds(10),
        ipBackoff: .seconds(30),
        ipBackoffMax: .minutes(5),
        upstreamTimeout: .seconds(60),
        headerTimeout: .seconds(30),
        clientIdleTimeout: .seconds(60),
        tunnelIdleTimeout: .seconds(300),
        poolMaxIdle: 64,
        poolIdleTimeout: .seconds(30),
        shutdownGrace: .seconds(20),
        viaPseudonym: "httpdns-proxy",
        threads: 0,
        configFile: nil
    )

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
