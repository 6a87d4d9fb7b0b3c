import ProxyKit

/// Where a proxied request goes, parsed from an absolute-form URI (`http://host:port/path?q`) or a
/// CONNECT authority (`host:port`, `[v6]:port`).
package struct RequestTarget: Sendable, Hashable {
    package enum Scheme: String, Sendable, Hashable {
        case http
        case https

        var defaultPort: Int { self == .http ? 80 : 443 }
    }

    package var scheme: Scheme
    /// Lowercased host name or IP literal, without IPv6 brackets.
    package var host: String
    package var port: Int
    /// The origin-form request target sent upstream ("/" when the URI had no path).
    package var pathAndQuery: String
    /// The value for the Host header: host (bracketed when IPv6) plus ":port" when the URI named one.
    package var authority: String

    package var isIPv6Literal: Bool { host.contains(":") }

    /// Parses an absolute-form request target (RFC 9112 §3.2.2). Only `http` and `https`.
    ///
    /// This runs for every forwarded request, so it scans the UTF-8 bytes by offset (all
    /// delimiters are ASCII) and copies the host and authority as written when they are already
    /// in canonical form.
    package static func parseAbsolute(_ uri: String) throws(ProxyError) -> RequestTarget {
        try overUTF8(uri) { bytes throws(ProxyError) in try parseAbsolute(bytes, uri: uri) }
    }

    /// `body` over the UTF-8 of `text`: its own storage (a native string's), else a copy.
    private static func overUTF8<T>(_ text: some StringProtocol, _ body: (UnsafeBufferPointer<UInt8>) throws(ProxyError) -> T) throws(ProxyError) -> T {
        func run(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<T, ProxyError> {
            do throws(ProxyError) { return .success(try body(bytes)) } catch { return .failure(error) }
        }
        if let result = text.utf8.withContiguousStorageIfAvailable(run) { return try result.get() }
        return try Array(text.utf8).withUnsafeBufferPointer(run).get()
    }

    private static func parseAbsolute(_ bytes: UnsafeBufferPointer<UInt8>, uri: String) throws(ProxyError) -> RequestTarget {
        guard let schemeEnd = bytes.firstIndex(of: UInt8(ascii: ":")) else {
            throw uri.hasPrefix("/") || uri == "*" ? .originForm(uri) : .malformed("request target '\(ProxyError.sanitized(uri))' is not an absolute URI")
        }
        guard let scheme = Scheme(caseInsensitive: bytes[..<schemeEnd]) else {
            if uri.hasPrefix("/") { throw .originForm(uri) }
            let written = text(bytes, 0..<schemeEnd).lowercased()
            throw ProxyError(.unsupportedScheme, "scheme '\(ProxyError.sanitized(written, limit: 20))' is not supported (use http://, https://, ws:// or wss://)")
        }
        let slash = UInt8(ascii: "/")
        guard schemeEnd + 2 < bytes.count, bytes[schemeEnd + 1] == slash, bytes[schemeEnd + 2] == slash
        else {
            throw .malformed("request target '\(ProxyError.sanitized(uri))' has no authority")
        }
        let authorityStart = schemeEnd + 3
        var authorityEnd = authorityStart
        while authorityEnd < bytes.count {
            let byte = bytes[authorityEnd]
            if byte == slash || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte == UInt8(ascii: "@") { throw .malformed("credentials in the request URI are not supported") }
            authorityEnd += 1
        }
        let parsed = try hostPort(UnsafeBufferPointer(rebasing: bytes[authorityStart..<authorityEnd]), defaultPort: scheme.defaultPort)

        let pathEnd = bytes[authorityEnd...].firstIndex(of: UInt8(ascii: "#")) ?? bytes.count
        let pathAndQuery: String
        if authorityEnd == pathEnd {
            pathAndQuery = "/"
        } else if bytes[authorityEnd] == UInt8(ascii: "?") {
            pathAndQuery = "/" + text(bytes, authorityEnd..<pathEnd)
        } else {
            pathAndQuery = text(bytes, authorityEnd..<pathEnd)
        }
        return RequestTarget(
            scheme: scheme,
            host: parsed.host,
            port: parsed.port,
            pathAndQuery: pathAndQuery,
            authority: parsed.authority
        )
    }

    /// Parses a CONNECT request target: `host:port` or `[v6]:port`; the port is required.
    package static func parseConnectAuthority(_ text: String) throws(ProxyError) -> RequestTarget {
        let parsed = try parseHostPort(Substring(text), defaultPort: 443)
        guard parsed.hadPort else {
            throw .malformed("CONNECT target '\(ProxyError.sanitized(String(text)))' must be host:port")
        }
        return RequestTarget(scheme: .https, host: parsed.host, port: parsed.port, pathAndQuery: "", authority: parsed.authority)
    }

    /// `authority` is the Host header value: the lowercased host (bracketed when IPv6), plus
    /// ":port" when the text named a port.
    static func parseHostPort(_ text: Substring, defaultPort: Int) throws(ProxyError) -> (host: String, port: Int, hadPort: Bool, authority: String) {
        try overUTF8(text) { bytes throws(ProxyError) in try hostPort(bytes, defaultPort: defaultPort) }
    }

    /// `parseHostPort` on the authority's bytes.
    private static func hostPort(_ bytes: UnsafeBufferPointer<UInt8>, defaultPort: Int) throws(ProxyError) -> (host: String, port: Int, hadPort: Bool, authority: String) {
        guard !bytes.isEmpty else { throw .malformed("the request URI has an empty host") }
        let colon = UInt8(ascii: ":")
        let hostRange: Range<Int>
        var portStart: Int?
        let bracketed = bytes[0] == UInt8(ascii: "[")
        if bracketed {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else {
                throw .malformed("unterminated IPv6 literal in '\(ProxyError.sanitized(text(bytes, 0..<bytes.count)))'")
            }
            hostRange = 1..<close
            let after = close + 1
            if after < bytes.count {
                guard bytes[after] == colon else {
                    throw .malformed("unexpected characters after IPv6 literal in '\(ProxyError.sanitized(text(bytes, 0..<bytes.count)))'")
                }
                portStart = after + 1
            }
            guard !hostRange.isEmpty, bytes[hostRange].allSatisfy(Self.isIPv6LiteralByte) else {
                throw .malformed("invalid IPv6 literal '[\(ProxyError.sanitized(text(bytes, hostRange)))]'")
            }
        } else {
            if let lastColon = bytes.lastIndex(of: colon) {
                hostRange = 0..<lastColon
                portStart = lastColon + 1
            } else {
                hostRange = 0..<bytes.count
            }
            guard !hostRange.isEmpty else { throw .malformed("the request URI has an empty host") }
            guard hostRange.count <= 253, bytes[hostRange].allSatisfy(Self.isRegNameByte) else {
                throw .malformed("invalid host '\(ProxyError.sanitized(text(bytes, hostRange)))'")
            }
        }
        var port = defaultPort
        var portIsCanonical = true
        if let portStart {
            let portBytes = bytes[portStart...]
            var value = 0
            for byte in portBytes.prefix(6) {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { value = -1; break }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            guard !portBytes.isEmpty, portBytes.count <= 5, (1...65535).contains(value) else {
                throw .malformed("invalid port '\(ProxyError.sanitized(text(bytes, portStart..<bytes.count), limit: 20))'")
            }
            port = value
            portIsCanonical = portBytes.first != UInt8(ascii: "0")
        }
        let hasUpper = bytes.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
        // The host's bytes were checked to be ASCII: lowering them is `lowercased()`.
        let host = hasUpper ? String(decoding: bytes[hostRange].map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 }, as: UTF8.self) : text(bytes, hostRange)
        let authority: String
        if !hasUpper && portIsCanonical {
            // Already "host", "host:port", "[v6]" or "[v6]:port" as we would write it.
            authority = text(bytes, 0..<bytes.count)
        } else {
            let hostForHeader = bracketed ? "[\(host)]" : host
            authority = portStart == nil ? hostForHeader : "\(hostForHeader):\(port)"
        }
        return (host, port, portStart != nil, authority)
    }

    /// The bytes in `range` as a String (the text they were cut from is valid UTF-8, and every cut
    /// is next to an ASCII delimiter, so nothing is repaired).
    private static func text(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    private static func isIPv6LiteralByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: ":"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }

    private static func isRegNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }
}

extension RequestTarget.Scheme {
    /// `http` or `https` in any letter case.
    init?(caseInsensitive bytes: some Sequence<UInt8>) {
        var lowered: UInt64 = 0
        var count = 0
        for byte in bytes {
            count += 1
            guard count <= 5 else { return nil }
            lowered = lowered << 8 | UInt64(byte | 0x20)
        }
        switch (count, lowered) {
        case (4, 0x6874_7470): self = .http  // "http"
        case (5, 0x68_7474_7073): self = .https  // "https"
        // WebSocket through an HTTP proxy: aiohttp and recent curl send the ws:// or wss:// URI in
        // absolute form. The request is an HTTP upgrade to the same origin (RFC 6455 §3).
        case (2, 0x7773): self = .http  // "ws"
        case (3, 0x77_7373): self = .https  // "wss"
        default: return nil
        }
    }
}

extension RequestTarget {
    /// What an access-log line shows of a target that could not be parsed: the authority and
    /// path as written (escaped, short), so a rejected request still says where it was going.
    package static func loggable(_ uri: String) -> (host: String, port: Int, path: String) {
        var rest = Substring(uri)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var host = authority
        var port = 0
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]"),
            let number = Int(authority[authority.index(after: colon)...]), (0...65535).contains(number)
        {
            host = authority[..<colon]
            port = number
        }
        let path = rest[authorityEnd...].prefix { $0 != "?" }
        return (ProxyError.sanitized(String(host), limit: 100), port, ProxyError.sanitized(String(path), limit: 100))
    }
}
