import HTTPDNS
import NIOCore

/// One access-log line: a forwarded request or a tunnel. Durations are milliseconds; nil when the
/// phase did not happen (e.g. no connect because a pooled connection was reused).
package struct AccessLogRecord: Sendable, Equatable {
    /// `transparent`: a connection of the transparent listener (a relay, or an HTTP request).
    package enum Kind: String, Sendable { case request, tunnel, transparent }

    package var kind: Kind
    package var client: String
    /// The proxy-auth user whose credentials were checked (verified, or refused); nil without auth.
    package var user: String?
    package var method: String
    package var scheme: String
    package var host: String
    package var port: Int
    /// Path without the query string: queries often carry tokens, and logs must not.
    package var path: String
    package var dialedIP: String?
    /// The addresses dialed without getting a connection, when the request failed for it (not
    /// in the access log line; `/errors` shows them).
    package var failedIPs: [String] = []
    package var source: String?
    package var reused: Bool
    /// The proxy spoke TLS to the origin (https:// request or a tls-upgrade rule). False for CONNECT
    /// tunnels, whose TLS (if any) is the client's own, end to end.
    package var tls: Bool
    /// Whether this request's TLS handshake resumed a cached session; nil when it made no handshake
    /// (plain, or a reused pooled connection).
    package var tlsResumed: Bool?
    package var status: Int
    package var bytesUp: Int
    package var bytesDown: Int
    package var resolveMs: Double?
    package var connectMs: Double?
    /// The TLS handshake of the connection this request opened.
    package var tlsMs: Double?
    package var ttfbMs: Double?
    package var totalMs: Double
    package var error: String?
    /// The client's User-Agent (at most `userAgentLimit` bytes); nil when it sent none.
    package var userAgent: String?
    /// The client's Referer (at most `userAgentLimit` bytes), kept only with `--access-log-referer`
    /// (`logsReferer`): like a query string it can carry tokens.
    package var referer: String?
    package var logsReferer = false
    /// The proxy's id of the client connection and the request's number on it: the request id
    /// `<16 hex digits>-<number>`, formatted only when written (0: no request, no id).
    package var connectionID: UInt64 = 0
    package var exchange = 0
    /// The id the client sent in `--request-id-header`, when valid: it replaces the proxy's own.
    package var clientRequestID: String?
    /// The request's HTTP minor version (1.0 or 1.1), for the combined format's request line.
    package var httpMinor = 1
    /// The request target as the client sent it, for the request line of the combined and squid
    /// formats (its query and fragment are cut off when written). Kept only while the access log
    /// is on; empty for records of no request.
    package var requestTarget = ""
    /// Transparent connections: where the client dialed (SO_ORIGINAL_DST), what its first bytes
    /// were (`TransparentStats.Peek` labels) and whether that address is none of HTTPDNS's for the
    /// name (a hijacked or stale local DNS answer).
    package var originalDestination: String?
    package var peek: String?
    package var hijack: Bool?
    /// `error` as a bounded label (a `ProxyError` kind or one of `abortReasons`), for metrics.
    package var errorReason: String?

    static let userAgentLimit = 256

    /// A client's User-Agent as the record keeps it: whole characters (Unicode scalars) up to
    /// `userAgentLimit` bytes. Cutting the bytes instead could split a character, which decoding
    /// turns into U+FFFD and so into a value longer than the limit.
    package static func recordedUserAgent(_ agent: String) -> String {
        recordedField(agent)
    }

    /// A client's field (User-Agent, Referer) cut between characters to `userAgentLimit` bytes.
    package static func recordedField(_ agent: String) -> String {
        guard agent.utf8.count > userAgentLimit else { return agent }
        let scalars = agent.unicodeScalars
        var bytes = 0
        var end = scalars.startIndex
        while end < scalars.endIndex {
            let width = UTF8.width(scalars[end])
            guard bytes + width <= userAgentLimit else { break }
            bytes += width
            scalars.formIndex(after: &end)
        }
        return String(scalars[..<end])
    }

    /// A byte relay (CONNECT tunnel, upgrade, transparent relay) rather than one HTTP exchange.
    var isTunnelLike: Bool { kind == .tunnel || (kind == .transparent && scheme != "http") }

    /// This request's id: the client's own when it sent a valid one, else `<connection>-<number>`.
    package var requestID: String? {
        if let clientRequestID { return clientRequestID }
        guard connectionID != 0 else { return nil }
        var line = JSONLine(capacity: 40)
        line.requestID(connectionID, exchange)
        return line.text
    }

    /// Labels of the ends that are not a `ProxyError`.
    static let abortReasons = ["client_closed", "client_error", "tunnel_idle_timeout"]

    /// Records `error` as this request's error: its message for the log, its kind for metrics.
    package mutating func fail(_ error: ProxyError) {
        self.error = error.message
        self.errorReason = error.shortDescription
        self.failedIPs = error.dialed
    }

    /// Records an end that is not a `ProxyError` (one of `abortReasons`), unless an error is set.
    package mutating func abort(_ reason: String, message: String) {
        guard error == nil else { return }
        error = message
        errorReason = reason
    }

    package init(kind: Kind, client: String, method: String) {
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
    package func jsonLine(timestamp: String) -> String {
        var line = JSONLine()
        appendJSON(to: &line, timestamp: Array(timestamp.utf8))
        return line.text
    }

    /// Appends the record as one JSON object (no trailing newline): bytes straight into the log
    /// buffer, no intermediate strings.
    func appendJSON(to out: inout JSONLine, timestamp: [UInt8]) {
        out.raw("{\"ts\":\"")
        out.append(timestamp)
        out.raw("\",\"type\":\"")
        out.raw(kind.rawValue)
        out.raw("\"")
        out.string("client", client)
        out.string("user", user)
        out.string("method", method)
        out.string("scheme", scheme)
        out.string("host", host)
        out.raw(",\"port\":")
        out.decimal(port)
        out.string("path", path)
        out.string("ip", dialedIP)
        out.string("source", source)
        out.raw(reused ? ",\"reused\":true" : ",\"reused\":false")
        out.raw(tls ? ",\"tls\":true" : ",\"tls\":false")
        out.raw(",\"tls_resumed\":")
        out.raw(tlsResumed.map { $0 ? "true" : "false" } ?? "null")
        out.raw(",\"status\":")
        out.decimal(status)
        out.raw(",\"bytes_up\":")
        out.decimal(bytesUp)
        out.raw(",\"bytes_down\":")
        out.decimal(bytesDown)
        out.milliseconds("resolve_ms", resolveMs)
        out.milliseconds("connect_ms", connectMs)
        out.milliseconds("tls_ms", tlsMs)
        out.milliseconds("ttfb_ms", ttfbMs)
        out.milliseconds("total_ms", totalMs)
        out.string("error", error)
        out.string("user_agent", userAgent)
        if logsReferer { out.string("referer", referer) }
        if kind == .transparent {
            out.string("original_dst", originalDestination)
            out.string("peek", peek)
            out.raw(hijack == true ? ",\"hijack\":true" : ",\"hijack\":false")
        } else if let peek {
            // A sniffed SOCKS CONNECT (`socks-sniff`): the address asked for, and what the peek saw.
            out.string("original_dst", originalDestination)
            out.string("peek", peek)
        }
        if let clientRequestID {
            out.string("request_id", clientRequestID)
        } else if connectionID != 0 {
            out.raw(",\"request_id\":\"")
            out.requestID(connectionID, exchange)
            out.raw("\"")
        } else {
            out.raw(",\"request_id\":null")
        }
        out.raw("}")
    }
}

/// A log line being built as UTF-8 bytes, in memory of its own written through a pointer.
///
/// Noncopyable: it owns that memory and frees it. A buffer reused line after line (`LineBuffer`
/// keeps one) formats with no allocation and no per-piece array bookkeeping: each piece is one
/// capacity check and a copy.
struct JSONLine: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int = 512) {
        self.capacity = Swift.max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    init(bytes: [UInt8]) {
        self.init(capacity: bytes.count + 256)
        append(bytes)
    }

    deinit { base.deallocate() }

    /// A copy of the bytes written.
    var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// The bytes written, as text.
    var text: String { String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self) }

    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    /// Empties the line, keeping its memory.
    mutating func removeAll() { count = 0 }

    @inline(__always)
    mutating func reserve(_ more: Int) {
        if capacity - count < more { grow(more) }
    }

    @inline(never)
    private mutating func grow(_ more: Int) {
        let grown = Swift.max(capacity * 2, count + more)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        moved.update(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = grown
    }

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        reserve(1)
        base[count] = value
        count += 1
    }

    mutating func append(_ piece: UnsafeBufferPointer<UInt8>) {
        guard let source = piece.baseAddress, !piece.isEmpty else { return }
        reserve(piece.count)
        (base + count).update(from: source, count: piece.count)
        count += piece.count
    }

    mutating func append(_ piece: [UInt8]) {
        piece.withUnsafeBufferPointer { append($0) }
    }

    mutating func raw(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func raw(_ text: String) {
        if text.utf8.withContiguousStorageIfAvailable({ append($0) }) == nil {
            for value in text.utf8 { byte(value) }
        }
    }

    /// `,"key":"value"` (escaped) or `,"key":null`.
    mutating func string(_ key: StaticString, _ value: String?) {
        raw(",\"")
        raw(key)
        raw("\":")
        guard let value else { return raw("null") }
        if value.utf8.withContiguousStorageIfAvailable({ quoted($0) }) == nil {
            let copied = Array(value.utf8)
            copied.withUnsafeBufferPointer { quoted($0) }
        }
    }

    /// `"text"` with JSON's escapes: at most six bytes out per byte in, so one capacity check.
    private mutating func quoted(_ text: UnsafeBufferPointer<UInt8>) {
        reserve(text.count * 6 + 2)
        var out = base + count
        out.pointee = UInt8(ascii: "\""); out += 1
        for byte in text {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out[0] = UInt8(ascii: "\\"); out[1] = byte; out += 2
            case UInt8(ascii: "\n"):
                out[0] = UInt8(ascii: "\\"); out[1] = UInt8(ascii: "n"); out += 2
            case UInt8(ascii: "\r"):
                out[0] = UInt8(ascii: "\\"); out[1] = UInt8(ascii: "r"); out += 2
            case UInt8(ascii: "\t"):
                out[0] = UInt8(ascii: "\\"); out[1] = UInt8(ascii: "t"); out += 2
            case 0..<0x20:
                out[0] = UInt8(ascii: "\\"); out[1] = UInt8(ascii: "u"); out[2] = UInt8(ascii: "0"); out[3] = UInt8(ascii: "0")
                out[4] = Self.hexDigit(byte >> 4); out[5] = Self.hexDigit(byte & 0xF); out += 6
            default:
                out.pointee = byte; out += 1  // UTF-8 of a Swift String is valid: copied as it is
            }
        }
        out.pointee = UInt8(ascii: "\""); out += 1
        count = out - base
    }

    /// `<connection id as 16 hex digits>-<exchange number>`, no allocation.
    mutating func requestID(_ connection: UInt64, _ exchange: Int) {
        reserve(17)
        var shift: UInt64 = 60
        while true {
            base[count] = Self.hexDigit(UInt8((connection >> shift) & 0xF))
            count += 1
            if shift == 0 { break }
            shift -= 4
        }
        base[count] = UInt8(ascii: "-")
        count += 1
        decimal(exchange)
    }

    mutating func decimal(_ value: Int) {
        if value < 0 {
            byte(UInt8(ascii: "-"))
            // magnitude as UInt: Int.min has no positive Int
            return unsigned(value.magnitude)
        }
        unsigned(UInt(value))
    }

    /// The digits written from the end of a 20-byte window (UInt.max has 20), then moved down.
    private mutating func unsigned(_ value: UInt) {
        if value < 10 { return byte(UInt8(ascii: "0") + UInt8(value)) }
        reserve(20)
        let window = base + count
        var end = 20
        var rest = value
        while rest > 0 {
            end -= 1
            window[end] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        let digits = 20 - end
        UnsafeMutableRawPointer(window).copyMemory(from: window + end, byteCount: digits)  // memmove
        count += digits
    }

    /// `,"key":12.345` — milliseconds rounded to microseconds, trailing zeros dropped (`12`,
    /// `0.5`), or `null`. Same text as `JSONText.formatMs`.
    mutating func milliseconds(_ key: StaticString, _ value: Double?) {
        raw(",\"")
        raw(key)
        raw("\":")
        guard let value else { return raw("null") }
        guard value.isFinite, abs(value) < 1e12 else { return raw(JSONText.formatMs(value)) }
        let micros = Int((value * 1000).rounded())
        if micros < 0 { byte(UInt8(ascii: "-")) }
        let magnitude = micros.magnitude
        unsigned(magnitude / 1000)
        var fraction = magnitude % 1000
        guard fraction != 0 else { return }
        byte(UInt8(ascii: "."))
        var width = 3
        while fraction % 10 == 0 { fraction /= 10; width -= 1 }
        var divisor: UInt = width == 3 ? 100 : width == 2 ? 10 : 1
        while divisor > 0 {
            byte(UInt8(ascii: "0") + UInt8(fraction / divisor % 10))
            divisor /= 10
        }
    }

    static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}

extension TimeAmount {
    package var milliseconds: Double { Double(nanoseconds) / 1_000_000 }
}
