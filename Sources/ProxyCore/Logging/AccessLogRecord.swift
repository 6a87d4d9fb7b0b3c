import NIOCore

/// One access-log line: a forwarded request or a tunnel. Durations are milliseconds; nil when the
/// phase did not happen (e.g. no connect because a pooled connection was reused).
public struct AccessLogRecord: Sendable, Equatable {
    public enum Kind: String, Sendable { case request, tunnel }

    public var kind: Kind
    public var client: String
    /// The proxy-auth user whose credentials were checked (verified, or refused); nil without auth.
    public var user: String?
    public var method: String
    public var scheme: String
    public var host: String
    public var port: Int
    /// Path without the query string: queries often carry tokens, and logs must not.
    public var path: String
    public var dialedIP: String?
    public var source: String?
    public var reused: Bool
    /// The proxy spoke TLS to the origin (https:// request or a tls-upgrade rule). False for CONNECT
    /// tunnels, whose TLS (if any) is the client's own, end to end.
    public var tls: Bool
    /// Whether this request's TLS handshake resumed a cached session; nil when it made no handshake
    /// (plain, or a reused pooled connection).
    public var tlsResumed: Bool?
    public var status: Int
    public var bytesUp: Int
    public var bytesDown: Int
    public var resolveMs: Double?
    public var connectMs: Double?
    /// The TLS handshake of the connection this request opened.
    public var tlsMs: Double?
    public var ttfbMs: Double?
    public var totalMs: Double
    public var error: String?

    public init(kind: Kind, client: String, method: String) {
        self.kind = kind
        self.client = client
        self.method = method
        self.scheme = ""
        self.host = ""
        self.port = 0
        self.path = ""
        self.reused = false
        self.tls = false
        self.status = 0
        self.bytesUp = 0
        self.bytesDown = 0
        self.totalMs = 0
    }

    /// The record as one JSON object (no trailing newline).
    public func jsonLine(timestamp: String) -> String {
        var out = "{\"ts\":\"\(timestamp)\",\"type\":\"\(kind.rawValue)\""
        out.reserveCapacity(384)
        func str(_ key: String, _ value: String?) {
            out += ",\"\(key)\":"
            if let value { JSONText.appendQuoted(value, to: &out) } else { out += "null" }
        }
        func num(_ key: String, _ value: Double?) {
            out += ",\"\(key)\":"
            if let value { out += JSONText.formatMs(value) } else { out += "null" }
        }
        str("client", client)
        str("user", user)
        str("method", method)
        str("scheme", scheme)
        str("host", host)
        out += ",\"port\":\(port)"
        str("path", path)
        str("ip", dialedIP)
        str("source", source)
        out += ",\"reused\":\(reused)"
        out += ",\"tls\":\(tls)"
        out += ",\"tls_resumed\":" + (tlsResumed.map { "\($0)" } ?? "null")
        out += ",\"status\":\(status)"
        out += ",\"bytes_up\":\(bytesUp),\"bytes_down\":\(bytesDown)"
        num("resolve_ms", resolveMs)
        num("connect_ms", connectMs)
        num("tls_ms", tlsMs)
        num("ttfb_ms", ttfbMs)
        num("total_ms", totalMs)
        str("error", error)
        out += "}"
        return out
    }
}

/// Minimal JSON text helpers (the log path must not allocate an encoder per line).
enum JSONText {
    static func appendQuoted(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    static func formatMs(_ value: Double) -> String {
        let scaled = (value * 1000).rounded() / 1000
        if scaled == scaled.rounded() { return String(Int(scaled)) }
        return String(scaled)
    }
}

extension TimeAmount {
    var milliseconds: Double { Double(nanoseconds) / 1_000_000 }
}
