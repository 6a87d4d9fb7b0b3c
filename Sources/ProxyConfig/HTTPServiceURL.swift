/// An http or https URL of a service the proxy itself calls (the resolver,
/// a static list), checked when the configuration is loaded.
///
/// Accepted: `http://` or `https://` (scheme case-insensitive), a host name,
/// IPv4 literal or bracketed IPv6 literal, an optional port 1-65535, then an
/// optional path and query. Rejected: other schemes, user info (`user:pw@`:
/// credentials do not belong in a URL that may be logged), fragments and
/// spaces.
public struct HTTPServiceURL: Sendable, Hashable {
    /// The URL as configured.
    public let text: String
    /// True for https.
    public let isHTTPS: Bool
    /// The host: lowercased name, or canonical IP literal without brackets.
    public let host: String
    /// The explicit port, else 443 for https and 80 for http.
    public let port: Int
    /// Everything after the authority ("/resolve", "/dns-query?x=1"), possibly empty.
    public let pathAndQuery: String

    /// The host as an IP address when it is a literal (then no bootstrap pinning is needed).
    public var hostIPAddress: IPAddress? { IPAddress(host) }

    /// Parses and explains what is wrong.
    public init(parsing text: String) throws(ConfigurationError) {
        let example = "expected an http or https URL like https://dns.example.com/dns-query"
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            isHTTPS = true
            rest = text.dropFirst("https://".count)
        } else if lower.hasPrefix("http://") {
            isHTTPS = false
            rest = text.dropFirst("http://".count)
        } else {
            throw .malformedValue(reason: example)
        }
        guard !text.contains(where: { $0 == " " || $0.isNewline || $0 == "\t" }) else {
            throw .malformedValue(reason: "\(example) (no spaces)")
        }
        guard !text.contains("#") else {
            throw .malformedValue(reason: "\(example) (no #fragment)")
        }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard !authority.contains("@") else {
            throw .malformedValue(reason: "\(example) (user names and passwords in the URL are not supported)")
        }
        let (hostText, parsedPort) = try HostName.splitAuthority(
            authority,
            example: example,
            bracketHint: "https://[2001:db8::1]/dns-query"
        )
        guard !hostText.isEmpty else {
            throw .malformedValue(reason: "\(example) (the host is missing)")
        }
        do {
            host = try HostName.normalize(String(hostText), allowing: .ipAddress)
        } catch {
            throw .malformedValue(reason: "\(example) (\(error))")
        }
        port = parsedPort ?? (isHTTPS ? 443 : 80)
        self.text = text
        pathAndQuery = String(rest[authorityEnd...])
    }
}

extension HTTPServiceURL: CustomStringConvertible {
    public var description: String { text }
}
