/// Where a proxied request goes, parsed from an absolute-form URI (`http://host:port/path?q`) or a
/// CONNECT authority (`host:port`, `[v6]:port`).
public struct RequestTarget: Sendable, Hashable {
    public enum Scheme: String, Sendable, Hashable {
        case http
        case https

        var defaultPort: Int { self == .http ? 80 : 443 }
    }

    public var scheme: Scheme
    /// Lowercased host name or IP literal, without IPv6 brackets.
    public var host: String
    public var port: Int
    /// The origin-form request target sent upstream ("/" when the URI had no path).
    public var pathAndQuery: String
    /// The value for the Host header: host (bracketed when IPv6) plus ":port" when the URI named one.
    public var authority: String

    public var isIPv6Literal: Bool { host.contains(":") }

    /// Parses an absolute-form request target (RFC 9112 §3.2.2). Only `http` and `https`.
    public static func parseAbsolute(_ uri: String) throws(ProxyError) -> RequestTarget {
        guard let schemeEnd = uri.firstIndex(of: ":") else {
            throw uri.hasPrefix("/") || uri == "*" ? .originForm(uri) : .malformed("request target '\(uri.prefix(200))' is not an absolute URI")
        }
        let schemeText = uri[..<schemeEnd].lowercased()
        guard let scheme = Scheme(rawValue: schemeText) else {
            if uri.hasPrefix("/") { throw .originForm(uri) }
            throw ProxyError(.unsupportedScheme, "scheme '\(schemeText.prefix(20))' is not supported (use http:// or https://)")
        }
        let afterScheme = uri[uri.index(after: schemeEnd)...]
        guard afterScheme.hasPrefix("//") else {
            throw .malformed("request target '\(uri.prefix(200))' has no authority")
        }
        let rest = afterScheme.dropFirst(2)
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authorityText = rest[..<authorityEnd]
        if authorityText.contains("@") {
            throw .malformed("credentials in the request URI are not supported")
        }
        let (host, port, hadPort) = try parseHostPort(authorityText, defaultPort: scheme.defaultPort)

        var path = rest[authorityEnd...]
        if let hash = path.firstIndex(of: "#") { path = path[..<hash] }
        let pathAndQuery: String
        if path.isEmpty {
            pathAndQuery = "/"
        } else if path.first == "?" {
            pathAndQuery = "/" + path
        } else {
            pathAndQuery = String(path)
        }
        let hostForHeader = host.contains(":") ? "[\(host)]" : host
        return RequestTarget(
            scheme: scheme,
            host: host,
            port: port,
            pathAndQuery: pathAndQuery,
            authority: hadPort ? "\(hostForHeader):\(port)" : hostForHeader
        )
    }

    /// Parses a CONNECT request target: `host:port` or `[v6]:port`; the port is required.
    public static func parseConnectAuthority(_ text: String) throws(ProxyError) -> RequestTarget {
        let (host, port, hadPort) = try parseHostPort(Substring(text), defaultPort: 443)
        guard hadPort else {
            throw .malformed("CONNECT target '\(text.prefix(200))' must be host:port")
        }
        let hostForHeader = host.contains(":") ? "[\(host)]" : host
        return RequestTarget(scheme: .https, host: host, port: port, pathAndQuery: "", authority: "\(hostForHeader):\(port)")
    }

    static func parseHostPort(_ text: Substring, defaultPort: Int) throws(ProxyError) -> (String, Int, Bool) {
        guard !text.isEmpty else { throw .malformed("the request URI has an empty host") }
        var host: Substring
        var portText: Substring?
        if text.first == "[" {
            guard let close = text.firstIndex(of: "]") else {
                throw .malformed("unterminated IPv6 literal in '\(text.prefix(200))'")
            }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else { throw .malformed("unexpected characters after IPv6 literal in '\(text.prefix(200))'") }
                portText = after.dropFirst()
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw .malformed("invalid IPv6 literal '[\(host.prefix(100))]'")
            }
        } else {
            if let colon = text.lastIndex(of: ":") {
                host = text[..<colon]
                portText = text[text.index(after: colon)...]
            } else {
                host = text
            }
            guard !host.isEmpty else { throw .malformed("the request URI has an empty host") }
            guard host.utf8.count <= 253, host.utf8.allSatisfy(Self.isRegNameByte) else {
                throw .malformed("invalid host '\(host.prefix(100))'")
            }
        }
        var port = defaultPort
        var hadPort = false
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCIIDigit),
                  let value = Int(portText), (1...65535).contains(value)
            else {
                throw .malformed("invalid port '\(portText.prefix(20))'")
            }
            port = value
            hadPort = true
        }
        return (host.lowercased(), port, hadPort)
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

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
