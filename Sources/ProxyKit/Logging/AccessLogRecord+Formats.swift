#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The access-log formats that log pipelines already parse (`--access-log-format`), written
/// straight into bytes like the JSON line.
extension AccessLogRecord {
    /// nginx/Apache "combined":
    /// `127.0.0.1 - alice [25/Nov/2026:16:45:00 +0000] "GET http://a.test/p HTTP/1.1" 200 512 "-" "curl/7.88.1" "5f1c09a200000003-1"`,
    /// the request id last (as nginx users add `"$request_id"`).
    /// The request line is the one received (nginx's `$request`) without its query (queries carry
    /// tokens, as in the JSON line); the referer is "-" unless `--access-log-referer` (it can carry
    /// tokens too); bytes are the response bytes sent to the client.
    func appendCombined(to out: inout JSONLine, time: [UInt8]) {
        out.raw(Self.address(of: client))
        out.raw(" - ")
        out.quotedField(user, quotes: false)
        out.raw(" [")
        out.append(time)
        out.raw("] \"")
        if method == "-" {
            out.raw("-")
        } else {
            out.escaped(method)
            out.raw(" ")
            if !requestTarget.isEmpty {
                out.requestTarget(requestTarget, quoted: true)
            } else {
                out.escaped(isTunnelLike ? "\(host):\(port)" : url)
            }
            out.raw(httpMinor == 0 ? " HTTP/1.0" : " HTTP/1.1")
        }
        out.raw("\" ")
        out.decimal(status)
        out.raw(" ")
        out.decimal(bytesDown)
        out.raw(" ")
        out.quotedField(referer, quotes: true)
        out.raw(" ")
        out.quotedField(userAgent, quotes: true)
        out.raw(" \"")
        appendRequestID(to: &out, quoted: true)
        out.raw("\"")
    }

    /// Squid's native format (`logformat squid`):
    /// `1764089100.123    45 127.0.0.1 TCP_MISS/200 512 GET http://a.test/p - HIER_DIRECT/127.0.0.1 - 5f1c09a200000003-1`,
    /// Squid's ten fields and the request id, then the Referer with `--access-log-referer`.
    func appendSquid(to out: inout JSONLine, seconds: Int, milliseconds: Int) {
        out.decimal(seconds)
        out.raw(".")
        out.byte(UInt8(ascii: "0") + UInt8(milliseconds / 100))
        out.byte(UInt8(ascii: "0") + UInt8(milliseconds / 10 % 10))
        out.byte(UInt8(ascii: "0") + UInt8(milliseconds % 10))
        let elapsed = Int(totalMs.rounded())
        var width = 1
        var rest = elapsed / 10
        while rest > 0 { width += 1; rest /= 10 }
        for _ in width..<6 { out.byte(UInt8(ascii: " ")) }
        out.raw(" ")
        out.decimal(elapsed)
        out.raw(" ")
        out.raw(Self.address(of: client))
        out.raw(" ")
        out.raw(squidResultCode)
        out.raw("/")
        out.byte(UInt8(ascii: "0") + UInt8(status / 100 % 10))
        out.byte(UInt8(ascii: "0") + UInt8(status / 10 % 10))
        out.byte(UInt8(ascii: "0") + UInt8(status % 10))
        out.raw(" ")
        out.decimal(bytesDown)
        out.raw(" ")
        out.escaped(method)
        out.raw(" ")
        if !requestTarget.isEmpty {
            out.requestTarget(requestTarget, quoted: false)
        } else if isTunnelLike {
            out.escaped("\(host):\(port)")
        } else if host.isEmpty {
            out.raw("-")
        } else {
            out.escaped(url)
        }
        out.raw(" ")
        out.quotedField(user, quotes: false)
        if let dialedIP {
            out.raw(" HIER_DIRECT/")
            out.raw(dialedIP)
        } else {
            out.raw(" HIER_NONE/-")
        }
        out.raw(" - ")
        appendRequestID(to: &out, quoted: false)
        if logsReferer {
            out.raw(" ")
            out.quotedField(referer, quotes: false)
        }
    }

    /// The request id, or "-" for a record of no request. A client's id is escaped like any client
    /// bytes (spaces too where the field is not quoted), although only ids of letters, digits and
    /// `-._:+/=` are kept.
    private func appendRequestID(to out: inout JSONLine, quoted: Bool) {
        if let clientRequestID {
            if quoted { out.escaped(clientRequestID) } else { out.quotedField(clientRequestID, quotes: false) }
        } else if connectionID != 0 {
            out.requestID(connectionID, exchange)
        } else {
            out.raw("-")
        }
    }

    /// Squid's result codes as its log readers know them: TCP_TUNNEL for CONNECT, TCP_DENIED for
    /// refusals by the ACL, the destination policy or proxy authentication, NONE_NONE for bytes
    /// that never became a request, TCP_MISS for everything forwarded (this proxy caches no content).
    var squidResultCode: String {
        switch errorReason {
        case "client_not_allowed", "destination_denied", "route_denied", "connect_port_denied", "proxy_auth_required", "too_many_connections":
            return "TCP_DENIED"
        default:
            if method == "-" { return "NONE_NONE" }
            return isTunnelLike ? "TCP_TUNNEL" : "TCP_MISS"
        }
    }

    /// scheme://host[:port]path, the port only when it is not the scheme's default.
    var url: String {
        let defaultPort = scheme == "https" || scheme == "wss" ? 443 : 80
        let authority = host.contains(":") ? "[\(host)]" : host
        return port == defaultPort || port == 0 ? "\(scheme)://\(authority)\(path)" : "\(scheme)://\(authority):\(port)\(path)"
    }

    /// The client's address without its port ("127.0.0.1:5000" → "127.0.0.1", "[::1]:5000" → "::1").
    static func address(of client: String) -> String {
        if client.hasPrefix("["), let close = client.firstIndex(of: "]") {
            return String(client[client.index(after: client.startIndex)..<close])
        }
        if let colon = client.lastIndex(of: ":"), client.firstIndex(of: ":") == colon {
            return String(client[..<colon])
        }
        return client.isEmpty ? "-" : client
    }
}

extension JSONLine {
    /// Text as nginx writes variables into its log: `"`, `\`, controls, DEL and non-ASCII bytes
    /// as `\xHH`, so a line can never be split or a field's quotes broken by client bytes.
    mutating func escaped(_ text: String) {
        for byte in text.utf8 { escaped(byte) }
    }

    /// A request target as received, up to its query or fragment (they carry tokens), at most
    /// `requestTargetLimit` bytes, escaped; spaces as `\x20` too where the field is not quoted.
    mutating func requestTarget(_ target: String, quoted: Bool) {
        var written = 0
        for byte in target.utf8 {
            if byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") || written == Self.requestTargetLimit { break }
            written += 1
            if !quoted && byte == UInt8(ascii: " ") {
                raw("\\x20")
            } else {
                escaped(byte)
            }
        }
        if written == 0 { raw("-") }
    }

    /// The longest request target logged, in bytes: the longest the proxy accepts.
    static let requestTargetLimit = maxRequestTargetLength

    mutating func escaped(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0..<0x20, 0x7F...:
            raw("\\x")
            self.byte(Self.hexDigit(byte >> 4))
            self.byte(Self.hexDigit(byte & 0xF))
        default:
            self.byte(byte)
        }
    }

    /// `"value"` (or `value` without quotes), "-" when absent or empty. Spaces become `\x20`
    /// where the field is not quoted, so the line still splits on spaces.
    mutating func quotedField(_ value: String?, quotes: Bool) {
        guard let value, !value.isEmpty else {
            raw(quotes ? "\"-\"" : "-")
            return
        }
        if quotes { byte(UInt8(ascii: "\"")) }
        for byte in value.utf8 {
            if !quotes && byte == UInt8(ascii: " ") {
                raw("\\x20")
            } else {
                escaped(byte)
            }
        }
        if quotes { byte(UInt8(ascii: "\"")) }
    }
}

/// `25/Nov/2026:16:45:00 +0000` (nginx's `$time_local`, in UTC), formatted once per second.
struct CombinedTimestampCache {
    private var second = -1
    private var text: [UInt8] = []
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    mutating func stamp(_ ts: timespec) -> [UInt8] {
        let seconds = Int(ts.tv_sec)
        if seconds != second {
            second = seconds
            var raw = ts.tv_sec
            var tm = tm()
            gmtime_r(&raw, &tm)
            func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
            let month = Self.months[Int(tm.tm_mon)]
            text = Array("\(two(tm.tm_mday))/\(month)/\(tm.tm_year + 1900):\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)) +0000".utf8)
        }
        return text
    }
}
