/// The SSRF guard: decides whether the proxy may dial an IP address.
///
/// It is applied to the address actually dialled (after DNS resolution), not
/// to the host name in the request, so DNS rebinding and "localtest.me"-style
/// names that resolve to 127.0.0.1 are caught too.
///
/// Built-in denied ranges are in `DestinationPolicy.deniedRanges`. NAT64
/// (64:ff9b::/96), 6to4 (2002::/16) and Teredo embeddings are out of scope:
/// only IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is looked through.
public struct DestinationPolicy: Sendable {
    /// The outcome of `evaluate(_:)`.
    public enum Verdict: Sendable, Hashable {
        case allowed
        /// `reason` is a sentence for logs and error pages, e.g.
        /// "127.0.0.1 is a loopback address (allow it with --allow-destination)".
        case denied(reason: String)
    }

    /// A built-in denied block and the name used for it in verdicts.
    public struct DeniedRange: Sendable, Hashable {
        public let cidr: CIDR
        /// Short class name: "loopback", "private", "link-local", "CGNAT", "unspecified", "multicast", "broadcast".
        public let name: String
        /// The noun phrase used in the verdict, e.g. "a loopback address".
        public let phrase: String
    }

    /// Ranges no request may reach unless explicitly allowed: addresses of this
    /// host, of the local networks, and ones that are not unicast destinations at all.
    public static let deniedRanges: [DeniedRange] = {
        func range(_ text: String, _ name: String, _ phrase: String) -> DeniedRange {
            // Literal constants: a failure here is a typo caught by the unit tests.
            DeniedRange(cidr: CIDR(text)!, name: name, phrase: phrase)
        }
        return [
            range("127.0.0.0/8", "loopback", "a loopback address"),
            range("::1/128", "loopback", "a loopback address"),
            range("10.0.0.0/8", "private", "a private (RFC 1918) address"),
            range("172.16.0.0/12", "private", "a private (RFC 1918) address"),
            range("192.168.0.0/16", "private", "a private (RFC 1918) address"),
            range("fc00::/7", "private", "a private (unique local) address"),
            range("169.254.0.0/16", "link-local", "a link-local address"),
            range("fe80::/10", "link-local", "a link-local address"),
            range("100.64.0.0/10", "CGNAT", "a carrier-grade NAT (CGNAT) address"),
            range("0.0.0.0/8", "unspecified", "an unspecified address"),
            range("::/128", "unspecified", "an unspecified address"),
            range("224.0.0.0/4", "multicast", "a multicast address"),
            range("ff00::/8", "multicast", "a multicast address"),
            range("255.255.255.255/32", "broadcast", "the broadcast address"),
        ]
    }()

    /// Blocks that are permitted even when they fall in a denied range.
    public let allowed: [CIDR]

    /// A policy denying `deniedRanges` except addresses inside any of `allow`.
    /// The default (no allow-list) is the safe setting for a proxy reachable by others.
    public init(allow: [CIDR] = []) {
        self.allowed = allow
    }

    /// Whether the proxy may dial `ip`.
    ///
    /// An IPv4-mapped IPv6 address is judged as the IPv4 address it carries, so
    /// `::ffff:127.0.0.1` is loopback. The allow-list wins over the denied ranges.
    public func evaluate(_ ip: IPAddress) -> Verdict {
        if allowed.contains(where: { $0.contains(ip) }) {
            return .allowed
        }
        let unmapped = ip.unmappedIPv4
        guard let match = DestinationPolicy.deniedRanges.first(where: { $0.cidr.contains(unmapped ?? ip) }) else {
            return .allowed
        }
        let subject = unmapped.map { "\(ip) (IPv4-mapped \($0))" } ?? "\(ip)"
        return .denied(reason: "\(subject) is \(match.phrase) (allow it with --allow-destination)")
    }
}
