import NIOCore

/// Logging, metrics, timeouts, the upstream pool and the rest.
extension ConfigOption {
    // MARK: Logging and limits

    public static let logLevel = ConfigOption(
        name: "log-level", valueName: "level",
        help: "Minimum log level: trace, debug, info, notice, warning, error, critical",
        defaultText: "info", expectation: "expected one of: trace, debug, info, notice, warning, error, critical"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.logLevel = try keyword(single(items), as: LogLevel.self)
    }
    .table(.logging, .restart, \.logLevel,
        example: "debug",
        doc: "`trace`, `debug`, `info`, `notice`, `warning`, `error` or `critical`.")

    public static let logFormat = ConfigOption(
        name: "log-format", valueName: "format",
        help: "Log line format: json or text",
        defaultText: "json", expectation: "expected one of: json, text"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.logFormat = try keyword(single(items), as: LogFormat.self)
    }
    .table(.logging, .restart, \.logFormat,
        example: "text",
        doc: "`json` (one object per line) or `text`.")

    public static let accessLog = ConfigOption(
        name: "access-log", valueName: "stdout|off|path",
        help: "Where the access log goes: stdout, off, or a file path containing '/'",
        defaultText: "stdout", expectation: "expected stdout, off, or a file path containing '/'"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.accessLog = try AccessLogDestination(parsing: single(items))
    }
    .table(.logging, .restart, \.accessLog,
        example: "/var/log/httpdns-proxy/access.log",
        doc: "`stdout`, `off`, or a file path containing `/` (e.g. `./access.log`); its directory must exist (`config check` checks it without creating the file). A file is opened again on SIGUSR1 and SIGHUP, for log rotation: see [operations](operations.md#log-rotation-and-signals).")

    public static let accessLogFormat = ConfigOption(
        name: "access-log-format", valueName: "json|combined|squid",
        help: "Access log line format: json (every field), combined (nginx/Apache), or squid (Squid's native)",
        defaultText: "json", expectation: "expected one of: json, combined, squid"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.accessLogFormat = try keyword(single(items), as: AccessLogFormat.self)
    }
    .table(.logging, .restart, \.accessLogFormat,
        example: "combined",
        doc: "`json` (every field), `combined` (nginx/Apache combined) or `squid` (Squid's native format); see the README's \"Logs\". Needs a restart.")

    public static let accessLogReferer = ConfigOption(
        name: "access-log-referer", valueName: "bool",
        help: "Log each request's Referer as sent (at most 256 bytes), in every access-log format; off by default because a Referer can carry tokens: true or false",
        defaultText: "false", expectation: "expected true or false (also yes/no, 1/0)",
        isBoolean: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.accessLogReferer = try boolean(single(items))
    }
    .table(.logging, .live, \.accessLogReferer,
        example: "true",
        doc: "Log each request's `Referer` as the client sent it (cut to at most 256 bytes, between characters, and escaped like the other fields; query string included): the combined format's referer field, a `referer` field of the JSON line, one more field at the end of the squid line (after the request id; spaces as `\\x20`, `-` when the request had none). Off by default: a Referer can carry session ids and tokens of the page the client came from, which then sit in the log like any secret; turn it on only where the access log is guarded as such. Reloadable.")

    public static let requestIDHeader = ConfigOption(
        name: "request-id-header", valueName: "name",
        help: "Send each request's id (the access log's request_id) to the origin in this header, e.g. X-Request-Id, and back to the client in its response; a valid id the client sent in it is kept",
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
        example: "X-Request-Id",
        doc: "Send each request's id (the access log's `request_id`) to the origin in this field, e.g. `X-Request-Id`, and return it to the client in the same field of the response (also of the proxy's own error answers); a valid id the client sent in it (1–128 of letters, digits, `-._:+/=`) is kept. Fields the proxy manages itself (Host, Via, Connection, framing) are refused. Reloadable.")

    public static let metrics = ConfigOption(
        name: "metrics", valueName: "bool",
        help: "Record Prometheus metrics and serve them at the admin listener's /metrics: true or false",
        defaultText: "true", expectation: "expected true or false (also yes/no, 1/0)",
        isBoolean: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.metrics = try boolean(single(items))
    }
    .table(.admin, .restart, \.metrics,
        example: "false",
        doc: "Record Prometheus metrics and serve them at the admin listener's `/metrics` (see [operations.md](operations.md#metrics)); `false` records nothing and `/metrics` answers 404.")

    public static let networkMonitor = ConfigOption(
        name: "network-monitor", valueName: "bool",
        help: "Watch the host's addresses and routes; on a real change reset per-IP health and pooled connections and refresh cached names in the background: true or false",
        defaultText: "true", expectation: "expected true or false (also yes/no, 1/0)",
        isBoolean: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.networkMonitor = try boolean(single(items))
    }
    .table(.admin, .restart, \.networkMonitor,
        example: "false",
        doc: "Watch the host's addresses and routes (netlink; where netlink is unavailable the interface addresses are read every 10 s). On a real change of the addresses: per-IP health is reset, pooled upstream connections are retired, `ip-family auto` is detected again, the provider is told, and every cached name is refreshed once in the background while its old answer is still served (see [operations.md](operations.md#network-changes)). `false` turns all of that off. Needs a restart.")

    public static let connectTimeout = durationOption(
        "connect-timeout", default: "10s",
        help: "Limit for the TCP connect to an origin, across all its addresses"
    ) { $0.connectTimeout = $1 }
    .table(.upstream, .live, \.connectTimeout,
        example: "5s",
        doc: "Limit for the TCP connect to an origin, across all its resolved addresses; also the limit for each upstream TLS handshake (`https://` URIs, `tls-upgrade`).")

    public static let ipBackoff = durationOption(
        "ip-backoff", default: "30s",
        help: "After an origin address fails (refused, timeout, reset, TLS failure, closed before answering), dial it last for this long; doubled on each further failure"
    ) { $0.ipBackoff = $1 }
    .table(.upstream, .restart, \.ipBackoff,
        example: "10s",
        doc: "An origin address (IP and port) that failed (refused, timed out, reset, TLS failure, closed before answering) is dialed after every other address of its name for this long; each further consecutive failure doubles it. A successful connect clears it. See [Connecting by IP](#connecting-by-ip).")

    public static let ipBackoffMax = durationOption(
        "ip-backoff-max", default: "5m",
        help: "Ceiling of the doubling ip-backoff (at least ip-backoff)"
    ) { $0.ipBackoffMax = $1 }
    .table(.upstream, .restart, \.ipBackoffMax,
        example: "10m",
        doc: "Ceiling of the doubling `ip-backoff`; must be at least `ip-backoff`.")

    public static let upstreamTimeout = durationOption(
        "upstream-timeout", default: "60s",
        help: "Limit for the origin's response head, and for silence while reading its body"
    ) { $0.upstreamTimeout = $1 }
    .table(.upstream, .live, \.upstreamTimeout,
        example: "2m",
        doc: "Limit for the origin's response head, and the longest silence while reading a response body.")

    public static let headerTimeout = durationOption(
        "header-timeout", default: "30s",
        help: "A client must send its whole request head within this, else 408"
    ) { $0.headerTimeout = $1 }
    .table(.limits, .live, \.headerTimeout,
        example: "10s",
        doc: "A client must finish sending its request head within this, else 408.")

    public static let clientIdleTimeout = durationOption(
        "client-idle-timeout", default: "60s",
        help: "Close a keep-alive client connection idle between requests for this long"
    ) { $0.clientIdleTimeout = $1 }
    .table(.limits, .live, \.clientIdleTimeout,
        example: "30s",
        doc: "A keep-alive client connection with no request is closed after this.")

    public static let tunnelIdleTimeout = durationOption(
        "tunnel-idle-timeout", default: "300s",
        help: "Close a CONNECT tunnel or upgraded connection with no bytes either way for this long"
    ) { $0.tunnelIdleTimeout = $1 }
    .table(.limits, .live, \.tunnelIdleTimeout,
        example: "1h",
        doc: "A CONNECT tunnel or upgraded connection with no bytes either way is closed after this.")

    public static let poolMaxIdle = ConfigOption(
        name: "pool-max-idle", valueName: "count",
        help: "Idle upstream connections kept per origin per event-loop thread (0 disables pooling)",
        defaultText: "64", expectation: "expected a whole number 0 or more"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.poolMaxIdle = try integer(single(items), in: 0...Int.max)
    }
    .table(.upstream, .restart, \.poolMaxIdle,
        example: "16",
        doc: "Idle upstream connections kept per origin per event-loop thread; `0` disables pooling.")

    public static let poolIdleTimeout = durationOption(
        "pool-idle-timeout", default: "30s",
        help: "Close a pooled upstream connection idle for this long"
    ) { $0.poolIdleTimeout = $1 }
    .table(.upstream, .restart, \.poolIdleTimeout,
        example: "1m",
        doc: "A pooled upstream connection idle this long is closed.")

    public static let shutdownGrace = durationOption(
        "shutdown-grace", default: "20s",
        help: "On SIGTERM/SIGINT, let in-flight requests finish for up to this long, then close"
    ) { $0.shutdownGrace = $1 }
    .table(.limits, .restart, \.shutdownGrace,
        example: "30s",
        doc: "On SIGTERM/SIGINT: stop accepting, let in-flight requests finish within this, then close.")

    public static let via = ConfigOption(
        name: "via", valueName: "token",
        help: "Pseudonym added to Via headers and used to detect request loops (an HTTP token)",
        defaultText: "httpdns-proxy", expectation: "expected an HTTP token (no spaces or commas)"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.viaPseudonym = try token(single(items))
    }
    .table(.upstream, .restart, \.viaPseudonym,
        example: "corp-proxy",
        doc: "Pseudonym added to `Via` headers and used to detect request loops. Must be an HTTP token (no spaces or commas).")

    public static let threads = ConfigOption(
        name: "threads", valueName: "count",
        help: "Event-loop threads; 0 means one per CPU core",
        defaultText: "0", expectation: "expected a whole number 0...1024"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.threads = try integer(single(items), in: 0...1024)
    }
    .table(.listening, .restart, \.threads, inForce: InForce.threads,
        example: "4",
        doc: "Event-loop threads, 0-1024; `0` means one per CPU core.")
}
