/// A `tls-upgrade` rule: plain-http requests to a host are sent to the origin
/// over TLS instead.
///
/// - `api.example.com` matches `http://api.example.com` (port 80) and
///   originates TLS to port 443.
/// - `api.example.com:8080` matches `http://api.example.com:8080` and
///   originates TLS to port 8080 (same port, now speaking TLS).
/// - `*.example.com` matches any one label in front of example.com
///   (`a.example.com`, not `example.com` nor `a.b.example.com`).
///
/// Hosts are compared case-insensitively, without a trailing dot; IP literals
/// (`192.0.2.10`, `[2001:db8::1]:8080`) are allowed.
public struct TLSUpgradeRule: Sendable, Hashable {
    /// Lowercased host, `*.` wildcard, or canonical IP literal without brackets.
    public let host: String
    /// The http port the rule applies to, also the TLS port; nil means port 80, upgraded to 443.
    public let port: Int?

    /// A rule from parts, unchecked (for code and tests; user text goes through `init(parsing:)`).
    public init(host: String, port: Int? = nil) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST[:PORT]`.
    public init(parsing text: String) throws(ConfigurationError) {
        let example = "expected HOST or HOST:PORT like api.example.com, *.example.com or api.example.com:8080"
        let (hostText, parsedPort) = try HostName.splitAuthority(
            Substring(text),
            example: example,
            bracketHint: "[2001:db8::1]:8080"
        )
        do {
            host = try HostName.normalize(String(hostText), allowing: [.ipAddress, .wildcard])
        } catch {
            throw .malformedValue(reason: "\(example) (\(error))")
        }
        port = parsedPort
    }

    /// Whether the host part matches `host` (any case, trailing dot, IPv6 with or without brackets).
    public func matchesHost(_ host: String) -> Bool {
        HostName.matches(pattern: self.host, host: HostName.canonical(requestHost: host))
    }

    /// The TLS port for a plain-http request to `host`:`port`, or nil when this rule does not apply.
    public func tlsPort(host: String, port: Int) -> Int? {
        guard port == (self.port ?? 80), matchesHost(host) else { return nil }
        return self.port ?? 443
    }
}

extension TLSUpgradeRule: CustomStringConvertible, LosslessStringConvertible {
    /// The text form accepted by `init(parsing:)`, e.g. "*.example.com" or "[2001:db8::1]:8080".
    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return port.map { "\(shownHost):\($0)" } ?? shownHost
    }

    public init?(_ description: String) {
        guard let rule = try? TLSUpgradeRule(parsing: description) else { return nil }
        self = rule
    }
}

extension ProxyConfiguration {
    /// The TLS port to originate to for a plain-http request to `host`:`port`,
    /// or nil when no `tls-upgrade` rule matches. Rules naming the host exactly
    /// win over wildcard rules; otherwise the first matching rule wins.
    public func tlsUpgradeTarget(host: String, port: Int) -> Int? {
        let exact = tlsUpgrade.lazy.filter { !$0.host.hasPrefix("*.") }.compactMap { $0.tlsPort(host: host, port: port) }.first
        return exact ?? tlsUpgrade.lazy.filter { $0.host.hasPrefix("*.") }.compactMap { $0.tlsPort(host: host, port: port) }.first
    }

    /// The SPKI pins for `host` (exact entry first, else a `*.` wildcard entry), or nil when it has none.
    public func spkiPins(forHost host: String) -> [String]? {
        let canonical = HostName.canonical(requestHost: host)
        if let pins = spkiPins[canonical] { return pins }
        return spkiPins.first { $0.key.hasPrefix("*.") && HostName.matches(pattern: $0.key, host: canonical) }?.value
    }
}

/// SPKI pin text: base64 of a SHA-256 digest of a certificate's SubjectPublicKeyInfo.
enum SPKIPin {
    /// The canonical pin (padded standard base64, 44 characters) for `text`,
    /// which may carry an HPKP-style "sha256/" prefix and may omit the padding.
    static func normalize(_ text: String) throws(ConfigurationError) -> String {
        var body = Substring(text)
        if body.lowercased().hasPrefix("sha256/") { body = body.dropFirst("sha256/".count) }
        if body.count == 43 { body += "=" }
        guard body.count == 44, let bytes = decodeBase64(body), bytes.count == 32 else {
            throw .malformedValue(reason: "'\(text)' is not a pin: expected base64 of a 32-byte SHA-256 digest (44 characters ending in '=')")
        }
        return String(body)
    }

    /// Strict standard-alphabet base64 with padding; nil for anything else.
    static func decodeBase64(_ text: Substring) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
            case UInt8(ascii: "+"): 62
            case UInt8(ascii: "/"): 63
            default: nil
            }
        }
        var bytes: [UInt8] = []
        var index = 0
        while index < chars.count {
            let quad = chars[index..<index + 4]
            let isLast = index + 4 == chars.count
            let padding = quad.reversed().prefix(while: { $0 == UInt8(ascii: "=") }).count
            guard padding <= 2, padding == 0 || isLast else { return nil }
            var bits: UInt32 = 0
            for c in quad.prefix(4 - padding) {
                guard let v = value(c) else { return nil }
                bits = bits << 6 | UInt32(v)
            }
            bits <<= UInt32(6 * padding)
            let decoded = [UInt8(bits >> 16 & 0xff), UInt8(bits >> 8 & 0xff), UInt8(bits & 0xff)]
            // Unused low bits must be zero, so each pin has exactly one text form.
            if padding > 0, decoded[(3 - padding)...].contains(where: { $0 != 0 }) { return nil }
            bytes += decoded.prefix(3 - padding)
            index += 4
        }
        return bytes
    }
}
