/// One resolver answer for one name, whatever the provider's format.
public struct WireAnswer: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// At least one address in `ipv4` or `ipv6`.
        case addresses
        /// The name does not exist (rcode 3 / `Status` 3).
        case nxdomain
        /// The name exists but has no records of the asked type (or the provider returned none).
        case noData
    }

    public var outcome: Outcome
    /// Canonical dotted-quad text, deduplicated, in answer order.
    public var ipv4: [String]
    /// Canonical RFC 5952 text, deduplicated, in answer order.
    public var ipv6: [String]
    /// Seconds. For addresses: the min TTL of the records used (nil if the format has none).
    /// For nxdomain/noData: the negative TTL derived from the SOA (min(SOA TTL, SOA MINIMUM)) when present.
    /// Not capped here: capping is cache policy, not wire format.
    public var ttl: Int?
    /// Alibaba's `client_ip` (the address the service saw us as); informational only.
    public var clientIP: String?

    public init(outcome: Outcome, ipv4: [String] = [], ipv6: [String] = [], ttl: Int? = nil, clientIP: String? = nil) {
        self.outcome = outcome
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.ttl = ttl
        self.clientIP = clientIP
    }
}
