import NIOCore

/// The option table. Order here is the order of `--help` and of the docs table.
extension ConfigOption {
    public static let all: [ConfigOption] = [
        config, listen, adminListen, provider, connectPorts, allowDestination,
        logLevel, logFormat, accessLog,
        connectTimeout, upstreamTimeout, headerTimeout, clientIdleTimeout, tunnelIdleTimeout,
        poolMaxIdle, poolIdleTimeout, shutdownGrace, via, threads,
    ]

    private static let durationExpectation = "expected a duration like 500ms, 3s, 1.5s, 5m or 1h (a bare number means seconds)"
    private static let hostPortExpectation = "expected host:port like 127.0.0.1:8080, [::1]:8080 or localhost:8080"

    /// A timeout option; all durations share syntax and the "> 0" rule.
    private static func durationOption(
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

    public static let provider = ConfigOption(
        name: "provider", valueName: "name",
        help: "Where DNS answers come from: system (the OS resolver)",
        defaultText: "system", expectation: "expected a provider name like system"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.provider = try ProviderKind(parsing: single(items))
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

    public static let connectTimeout = durationOption(
        "connect-timeout", default: "10s",
        help: "Limit for the TCP connect to an origin, across all its addresses"
    ) { $0.connectTimeout = $1 }

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
