import Testing

@testable import ProxyKit
@testable import ProxyHTTP

/// The String-index parser the byte-offset one replaced, kept as the reference: the same targets,
/// the same refusals with the same messages.
enum LegacyRequestTarget {
    typealias Scheme = RequestTarget.Scheme
    static func parseAbsolute(_ uri: String) throws(ProxyError) -> RequestTarget {
        let bytes = uri.utf8
        guard let schemeEnd = bytes.firstIndex(of: UInt8(ascii: ":")) else {
            throw uri.hasPrefix("/") || uri == "*" ? ProxyError.originForm(uri) : .malformed("request target '\(ProxyError.sanitized(uri))' is not an absolute URI")
        }
        guard let scheme = Scheme(caseInsensitive: bytes[..<schemeEnd]) else {
            if uri.hasPrefix("/") { throw .originForm(uri) }
            throw ProxyError(.unsupportedScheme, "scheme '\(ProxyError.sanitized(String(uri[..<schemeEnd].lowercased()), limit: 20))' is not supported (use http://, https://, ws:// or wss://)")
        }
        let slash = UInt8(ascii: "/")
        let afterScheme = bytes.index(after: schemeEnd)
        guard afterScheme < bytes.endIndex, bytes[afterScheme] == slash,
              bytes.index(after: afterScheme) < bytes.endIndex, bytes[bytes.index(after: afterScheme)] == slash
        else {
            throw .malformed("request target '\(ProxyError.sanitized(uri))' has no authority")
        }
        let authorityStart = bytes.index(afterScheme, offsetBy: 2)
        var authorityEnd = authorityStart
        while authorityEnd < bytes.endIndex {
            let byte = bytes[authorityEnd]
            if byte == slash || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte == UInt8(ascii: "@") { throw .malformed("credentials in the request URI are not supported") }
            bytes.formIndex(after: &authorityEnd)
        }
        let parsed = try parseHostPort(uri[authorityStart..<authorityEnd], defaultPort: scheme.defaultPort)

        let pathEnd = bytes[authorityEnd...].firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
        let pathAndQuery: String
        if authorityEnd == pathEnd {
            pathAndQuery = "/"
        } else if bytes[authorityEnd] == UInt8(ascii: "?") {
            pathAndQuery = "/" + uri[authorityEnd..<pathEnd]
        } else {
            pathAndQuery = String(uri[authorityEnd..<pathEnd])
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
    static func parseConnectAuthority(_ text: String) throws(ProxyError) -> RequestTarget {
        let parsed = try parseHostPort(Substring(text), defaultPort: 443)
        guard parsed.hadPort else {
            throw .malformed("CONNECT target '\(ProxyError.sanitized(String(text)))' must be host:port")
        }
        return RequestTarget(scheme: .https, host: parsed.host, port: parsed.port, pathAndQuery: "", authority: parsed.authority)
    }

    /// `authority` is the Host header value: the lowercased host (bracketed when IPv6), plus
    /// ":port" when the text named a port.
    static func parseHostPort(_ text: Substring, defaultPort: Int) throws(ProxyError) -> (host: String, port: Int, hadPort: Bool, authority: String) {
        let bytes = text.utf8
        guard !bytes.isEmpty else { throw .malformed("the request URI has an empty host") }
        let colon = UInt8(ascii: ":")
        let hostRange: Range<String.Index>
        var portStart: String.Index?
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else {
                throw .malformed("unterminated IPv6 literal in '\(ProxyError.sanitized(String(text)))'")
            }
            hostRange = bytes.index(after: bytes.startIndex)..<close
            let after = bytes.index(after: close)
            if after < bytes.endIndex {
                guard bytes[after] == colon else { throw .malformed("unexpected characters after IPv6 literal in '\(ProxyError.sanitized(String(text)))'") }
                portStart = bytes.index(after: after)
            }
            guard !hostRange.isEmpty, bytes[hostRange].allSatisfy(Self.isIPv6LiteralByte) else {
                throw .malformed("invalid IPv6 literal '[\(ProxyError.sanitized(String(text[hostRange])))]'")
            }
        } else {
            if let lastColon = bytes.lastIndex(of: colon) {
                hostRange = bytes.startIndex..<lastColon
                portStart = bytes.index(after: lastColon)
            } else {
                hostRange = bytes.startIndex..<bytes.endIndex
            }
            guard !hostRange.isEmpty else { throw .malformed("the request URI has an empty host") }
            guard bytes[hostRange].count <= 253, bytes[hostRange].allSatisfy(Self.isRegNameByte) else {
                throw .malformed("invalid host '\(ProxyError.sanitized(String(text[hostRange])))'")
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
                throw .malformed("invalid port '\(ProxyError.sanitized(String(text[portStart...]), limit: 20))'")
            }
            port = value
            portIsCanonical = portBytes.first != UInt8(ascii: "0")
        }
        let hasUpper = bytes.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
        let host = hasUpper ? text[hostRange].lowercased() : String(text[hostRange])
        let authority: String
        if !hasUpper && portIsCanonical {
            // Already "host", "host:port", "[v6]" or "[v6]:port" as we would write it.
            authority = String(text)
        } else {
            let hostForHeader = bytes.first == UInt8(ascii: "[") ? "[\(host)]" : host
            authority = portStart == nil ? hostForHeader : "\(hostForHeader):\(port)"
        }
        return (host, port, portStart != nil, authority)
    }

    static func isIPv6LiteralByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: ":"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }

    static func isRegNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }
}

@Suite struct RequestTargetDifferentialTests {
    static let schemes = ["http", "HTTP", "https", "hTtPs", "ws", "WSS", "ftp", "", "h", "httpss", "é"]
    static let separators = ["://", "://", "://", ":/", ":", "//", ":///"]
    static let hosts = [
        "example.com", "Example.COM", "a.b-c_d.test", "[::1]", "[2001:DB8::1]", "[2001:db8::1]", "[zz]", "[::1",
        "[]", "[::1]x", "ho st", "é.test", "", "host:", "127.0.0.1", "user@host", String(repeating: "a", count: 253),
        String(repeating: "b", count: 254), "h%41", ":80",
    ]
    static let ports = ["", "", ":80", ":080", ":0", ":65535", ":65536", ":8x", ":", ":123456", ":00443", ":1"]
    static let paths = ["", "/", "/a/b", "?q=1", "#frag", "/p?x#y", "/é?ü", "/a#b#c", "?", "#", "/@", "//x"]

    @Test func absoluteTargetsParseAsTheStringParserDid() {
        var random = SystemRandomNumberGenerator()
        var cases: [String] = ["*", "/path", "/", "http", "http:", "http:/", "http://", "HTTP://EXAMPLE.COM"]
        for scheme in Self.schemes {
            for separator in Self.separators {
                for host in Self.hosts {
                    cases.append(scheme + separator + host + Self.ports.randomElement(using: &random)! + Self.paths.randomElement(using: &random)!)
                }
            }
        }
        for _ in 0..<3_000 {
            var text = ""
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                let pools = [Self.schemes, Self.separators, Self.hosts, Self.ports, Self.paths, ["@", "[", "]", ":", "/", "A", "\u{7f}", " "]]
                text += pools.randomElement(using: &random)!.randomElement(using: &random)!
            }
            cases.append(text)
        }
        for uri in cases {
            Self.expectSame(uri, try RequestTarget.parseAbsolute(uri), try LegacyRequestTarget.parseAbsolute(uri))
            Self.expectSame(uri, try RequestTarget.parseConnectAuthority(uri), try LegacyRequestTarget.parseConnectAuthority(uri))
        }
    }

    static func expectSame(
        _ uri: String, _ new: @autoclosure () throws(ProxyError) -> RequestTarget,
        _ old: @autoclosure () throws(ProxyError) -> RequestTarget
    ) {
        let a = Result<RequestTarget, ProxyError> { () throws(ProxyError) in try new() }
        let b = Result<RequestTarget, ProxyError> { () throws(ProxyError) in try old() }
        switch (a, b) {
        case (.success(let x), .success(let y)):
            #expect(x == y, "\(uri)")
        case (.failure(let x), .failure(let y)):
            #expect(x.message == y.message && x.shortDescription == y.shortDescription && x.status == y.status, "\(uri): \(x) vs \(y)")
        default:
            Issue.record("\(uri): \(a) vs \(b)")
        }
    }
}
