/// A parsed static domain list (the self-hosted provider's document).
public struct StaticListDocument: Sendable, Equatable {
    /// Addresses for one domain, canonical and deduplicated.
    public struct Entry: Sendable, Equatable {
        public var ipv4: [String]
        public var ipv6: [String]

        public init(ipv4: [String] = [], ipv6: [String] = []) {
            self.ipv4 = ipv4
            self.ipv6 = ipv6
        }
    }

    public var service: String?
    /// `enable: 0` turns the whole list off (every domain goes to the fallback).
    public var enabled: Bool
    /// Lowercased domain without trailing dot → addresses.
    public var entries: [String: Entry]

    public init(service: String? = nil, enabled: Bool = true, entries: [String: Entry] = [:]) {
        self.service = service
        self.enabled = enabled
        self.entries = entries
    }
}
