import NIOCore

/// The proxy's validated settings, produced by `ConfigurationLoader`.
///
/// Every field has its default in `ProxyConfiguration.defaults`; the option
/// registry (`ConfigOption.all`) says which flag, environment variable and
/// config-file key set it. Fields are `var` so code and tests can start from
/// `defaults` and change what they need; values set that way are not validated.
public struct ProxyConfiguration: Sendable, Equatable {
    /// Where the proxy listens. Default 127.0.0.1:8080: loopback only, so a
    /// fresh install is not an open proxy.
    public var listen: HostPort
    /// Where the admin endpoint (health, metrics) listens; `nil` when set to `off`.
    /// Default 127.0.0.1:8081.
    public var adminListen: HostPort?
    /// The DNS source. Default `.system`.
    public var provider: ProviderKind
    /// Ports CONNECT may target, sorted and unique. Default [443]: tunnelling
    /// to arbitrary ports would let clients reach SMTP, SSH, databases, ...
    public var connectPorts: [Int]
    /// Blocks exempt from the SSRF guard's denied ranges. Default [].
    public var allowDestinations: [CIDR]
    /// Default `.info`.
    public var logLevel: LogLevel
    /// Default `.json`.
    public var logFormat: LogFormat
    /// Default `.stdout`.
    public var accessLog: AccessLogDestination
    /// Limit for TCP connect to one origin, across all its resolved addresses. Default 10s.
    public var connectTimeout: TimeAmount
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

    /// The documented defaults, used for every option no source sets.
    public static let defaults = ProxyConfiguration(
        listen: HostPort(host: "127.0.0.1", port: 8080),
        adminListen: HostPort(host: "127.0.0.1", port: 8081),
        provider: .system,
        connectPorts: [443],
        allowDestinations: [],
        logLevel: .info,
        logFormat: .json,
        accessLog: .stdout,
        connectTimeout: .seconds(10),
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

    /// The SSRF guard for `allowDestinations`.
    public var destinationPolicy: DestinationPolicy {
        DestinationPolicy(allow: allowDestinations)
    }
}
