/// `system-dns-domain`: names that only the system resolver is asked about, never the HTTPDNS
/// service — cluster and corporate zones (`cluster.local`, `svc`, `corp.example.com`) that a
/// public service cannot answer and should not learn. When any suffix is set, single-label names
/// (`my-svc`, `printer`), which only a local search path can complete, are included.
public struct SystemDNSDomains: Sendable, Hashable, CustomStringConvertible {
    /// Lowercased, without leading or trailing dots, in the order given, without duplicates.
    public private(set) var suffixes: [String] = []

    public init() {}

    /// `items`: suffixes like `cluster.local`, `.internal` or `svc` (a leading dot changes nothing).
    public init(parsing items: [String]) throws(ConfigurationError) {
        for item in items {
            var text = item
            if text.hasPrefix(".") { text.removeFirst() }
            if text.hasPrefix("*.") {
                throw .malformedValue(reason: "'\(item)' is a wildcard; give the suffix alone (cluster.local covers every name under it)")
            }
            let suffix = try HostName.normalize(text)
            if !suffixes.contains(suffix) { suffixes.append(suffix) }
        }
    }

    public var isEmpty: Bool { suffixes.isEmpty }

    /// Whether `host` (a name from a request; any case, maybe with a trailing dot) goes to the
    /// system resolver only: it is a suffix or under one, or it is a single label and some suffix
    /// is set. IP literals never match.
    public func matches(_ host: String) -> Bool {
        guard !suffixes.isEmpty, !host.isEmpty else { return false }
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        guard !name.contains(":"), IPAddress(name) == nil else { return false }
        if !name.contains(".") { return true }
        // The matcher `route` and `pac-bypass` use: the suffix itself and every name under it.
        return suffixes.contains { DestinationPattern.domain($0).matches(host: name) }
    }

    public var description: String { "[" + suffixes.joined(separator: ", ") + "]" }
}
