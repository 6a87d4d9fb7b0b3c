/// A listening or connecting endpoint written as "host:port".
///
/// Accepted forms: "127.0.0.1:8080", "[::1]:8080", "localhost:8080",
/// "0.0.0.0:0". The port may be 0 (the kernel picks a free one, which tests
/// rely on). IPv6 literals need brackets because their colons would otherwise
/// be ambiguous with the port separator.
public struct HostPort: Sendable, Hashable {
    /// A host name or an IP literal without brackets. IP literals are stored in
    /// canonical form so "[0::1]:80" and "[::1]:80" compare equal.
    public let host: String
    /// 0...65535; 0 asks the kernel for an ephemeral port.
    public let port: Int

    /// An endpoint from parts, unchecked: intended for code and tests that build
    /// known-good values. Text from users should go through `init(text:)`.
    public init(host: String, port: Int) {
        self.host = IPAddress(host)?.description ?? host
        self.port = port
    }

    /// Parses "host:port"; `nil` for anything else.
    public init?(_ text: String) {
        guard let parsed = try? HostPort(text: text) else { return nil }
        self = parsed
    }

    /// Parses "host:port" and explains what is wrong.
    public init(text: String) throws(NetworkValueError) {
        let example = "expected host:port like 127.0.0.1:8080, [::1]:8080 or localhost:8080"
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw NetworkValueError(reason: "\(example) (missing ']' after the IPv6 address)")
            }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else {
                throw NetworkValueError(reason: "\(example) (missing ':port' after ']')")
            }
            portPart = rest.dropFirst()
            guard let address = IPAddress(String(hostPart)), !address.isIPv4 else {
                throw NetworkValueError(reason: "\(example) ('\(hostPart)' in brackets is not an IPv6 address)")
            }
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw NetworkValueError(reason: "\(example) (missing ':port')")
            }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            if hostPart.contains(":") {
                throw NetworkValueError(reason: "\(example) (an IPv6 address must be in brackets, like [::1]:8080)")
            }
            guard !hostPart.isEmpty else {
                throw NetworkValueError(reason: "\(example) (the host is missing; use 0.0.0.0 or [::] to listen on all addresses)")
            }
            if !HostPort.isValidHost(hostPart) {
                throw NetworkValueError(reason: "\(example) ('\(hostPart)' is neither an IP address nor a valid host name)")
            }
        }
        guard !portPart.isEmpty, portPart.count <= 5,
              portPart.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = Int(portPart), port <= 65535
        else {
            throw NetworkValueError(reason: "\(example) (port '\(portPart)' is not a number 0...65535)")
        }
        self.init(host: String(hostPart), port: port)
    }

    /// The host as an IP address when it is a literal, else `nil` (a name to resolve).
    public var ipAddress: IPAddress? { IPAddress(host) }

    /// An IPv4 literal or an RFC 1123 host name (letters, digits, hyphens, dots;
    /// underscores too, as container service names use them).
    /// Text that looks numeric must be a valid dotted quad, so "1.2.3.256" and
    /// "010.0.0.1" are errors rather than names to look up.
    private static func isValidHost(_ host: Substring) -> Bool {
        if IPAddress(String(host))?.isIPv4 == true { return true }
        if host.allSatisfy({ $0 == "." || ($0.isASCII && $0.isNumber) }) { return false }
        guard host.utf8.count <= 253 else { return false }
        let name = host.hasSuffix(".") ? host.dropLast() : host
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63
                && label.first != "-" && label.last != "-"
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        }
    }
}

extension HostPort: CustomStringConvertible, LosslessStringConvertible {
    /// "host:port", bracketing IPv6 literals: "[::1]:8080".
    public var description: String {
        if let ip = ipAddress, !ip.isIPv4 {
            return "[\(host)]:\(port)"
        }
        return "\(host):\(port)"
    }
}
