/// How log lines are written.
public enum LogFormat: String, Sendable, Hashable, CaseIterable {
    /// One JSON object per line: the default, as logs usually go to a collector.
    case json
    /// Human-readable lines for a terminal.
    case text
}

/// How access-log lines are written: the proxy's JSON, or a format log pipelines already parse.
public enum AccessLogFormat: String, Sendable, Hashable, CaseIterable {
    /// One JSON object per line, every field (the default).
    case json
    /// nginx/Apache "combined": `client - user [time] "request line" status bytes "referer" "user-agent"`.
    case combined
    /// Squid's native format: `time elapsed client code/status bytes method URL user hierarchy/ip type`.
    case squid
}
