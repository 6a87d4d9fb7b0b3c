/// `parent-proxy`: an upstream HTTP proxy the proxy's own connections go through (squid's
/// `cache_peer`, tinyproxy's `upstream`), with optional Basic credentials, spoken to in clear
/// (`http://`) or over TLS (`https://`, squid's `https_port`).
public struct ParentProxy: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// `user:password` for `Proxy-Authorization: Basic`; nil: none.
    public var credentials: String?
    /// `https://`: TLS to the parent itself, its certificate verified against `host`.
    public var tls: Bool

    public init(host: String, port: Int, credentials: String? = nil, tls: Bool = false) {
        self.host = host
        self.port = port
        self.credentials = credentials
        self.tls = tls
    }

    static let expectation = "expected http://[user:password@]host:port or https://..., like http://proxy.corp.example:3128"

    /// `http://[user:password@]host:port` or `https://...`; the port is required (parents listen
    /// on 3128, 8080, ...).
    public init(parsing text: String) throws(ConfigurationError) {
        let expectation = Self.expectation
        let lowered = text.lowercased()
        let scheme = ["http://", "https://"].first { lowered.hasPrefix($0) }
        guard let scheme else { throw .malformedValue(reason: expectation) }
        var rest = Substring(text.dropFirst(scheme.count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), !rest.contains("?") else { throw .malformedValue(reason: "a parent proxy URL has no path; \(expectation)") }
        var credentials: String?
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            guard let colon = userInfo.firstIndex(of: ":"), colon != userInfo.startIndex else {
                throw .malformedValue(reason: "credentials must be user:password; \(expectation)")
            }
            credentials = ParentProxy.percentDecoded(userInfo)
            rest = rest[rest.index(after: at)...]
        }
        let authority: HostPort
        do {
            authority = try HostPort(parsing: String(rest))
        } catch {
            throw .malformedValue(reason: "\(error); \(expectation)")
        }
        guard authority.port > 0 else { throw .malformedValue(reason: "the port is missing; \(expectation)") }
        self.init(host: authority.host, port: authority.port, credentials: credentials, tls: scheme == "https://")
    }

    /// `%XX` in credentials (a password with `@` or `:` in it).
    static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            let high = iterator.next(), low = iterator.next()
            if let high, let low, let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) {
                bytes.append(value)
            } else {
                bytes.append(byte)
                if let high { bytes.append(high) }
                if let low { bytes.append(low) }
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `host:port` as dialed (IPv6 in brackets).
    public var endpoint: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public var scheme: String { tls ? "https" : "http" }

    /// The URL with the password replaced: safe for logs, `config check` and the admin page.
    public var description: String {
        guard let credentials else { return "\(scheme)://\(endpoint)" }
        let user = credentials.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
        return "\(scheme)://\(user):***@\(endpoint)"
    }
}

/// `parent-resolve`: who turns a name into the address the parent is asked for.
public enum ParentResolve: String, Sendable, Hashable, CaseIterable {
    /// The proxy (HTTPDNS), asking the parent for `CONNECT IP:port`.
    case local
    /// The parent: `CONNECT name:port`, the parent's DNS.
    case parent
}

/// `parent-down`: what a connection does when the parent cannot be reached.
public enum ParentDown: String, Sendable, Hashable, CaseIterable {
    /// Fails (502): nothing leaves except through the parent.
    case fail
    /// Dialed directly instead.
    case direct
}
