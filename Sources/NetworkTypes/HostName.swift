/// Host-name checks shared by the resolver, TLS and domain-list options.
package enum HostName {
    /// What may stand where a host is expected.
    package struct Allowed: OptionSet, Sendable {
        package let rawValue: Int
        package init(rawValue: Int) { self.rawValue = rawValue }
        /// IPv4 and IPv6 literals (returned in canonical form, IPv6 without brackets).
        package static let ipAddress = Allowed(rawValue: 1)
        /// A leading "*." wildcard label: "*.example.com".
        package static let wildcard = Allowed(rawValue: 2)
    }

    /// A validated host, lowercased and without a trailing dot; IP literals
    /// in canonical form. Throws a `NetworkValueError` explaining what is wrong.
    package static func normalized(_ text: String, allowing allowed: Allowed = []) throws(NetworkValueError) -> String {
        var host = text.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]"), allowed.contains(.ipAddress) {
            guard let ip = IPAddress(String(host.dropFirst().dropLast())), !ip.isIPv4 else {
                throw NetworkValueError(reason: "'\(text)' in brackets is not an IPv6 address")
            }
            return ip.description
        }
        if let ip = IPAddress(host) {
            guard allowed.contains(.ipAddress) else {
                throw NetworkValueError(reason: "'\(text)' is an IP address; expected a host name like www.example.com")
            }
            return ip.description
        }
        if host.hasSuffix(".") { host.removeLast() }
        var wildcard = false
        if host.hasPrefix("*.") {
            guard allowed.contains(.wildcard) else {
                throw NetworkValueError(reason: "'\(text)' is a wildcard; expected a host name like www.example.com")
            }
            wildcard = true
            host.removeFirst(2)
        }
        guard isValidName(host) else {
            let form = allowed.contains(.wildcard) ? " (or a wildcard like *.example.com)" : ""
            throw NetworkValueError(reason: "'\(text)' is not a valid host name; expected a name like www.example.com\(form)")
        }
        return wildcard ? "*." + host : host
    }

    /// RFC 1123 labels of letters, digits and hyphens (underscores too, as
    /// service names use them), 1-63 bytes each, at most 253 in all. All-numeric
    /// text is rejected: it is a malformed IP address, not a name.
    package static func isValidName(_ host: String) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        if host.allSatisfy({ $0 == "." || ($0.isASCII && $0.isNumber) }) { return false }
        return host.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63
                && label.first != "-" && label.last != "-"
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        }
    }

    /// The form `pattern`s are kept in, for a host from a request: lowercased,
    /// no trailing dot, IPv6 without brackets, IP literals canonical.
    package static func canonical(requestHost host: String) -> String {
        var text = host.lowercased()
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let ip = IPAddress(text) { return ip.description }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    /// Whether a normalized pattern ("api.example.com" or "*.example.com")
    /// matches a canonical host. A wildcard stands for exactly one label.
    package static func matches(pattern: String, host: String) -> Bool {
        guard pattern.hasPrefix("*.") else { return pattern == host }
        let suffix = pattern.dropFirst(1) // ".example.com"
        guard host.hasSuffix(suffix) else { return false }
        let label = host.dropLast(suffix.count)
        return !label.isEmpty && !label.contains(".")
    }
}
