/// Follows a CNAME chain through an answer section, shared by the JSON and wire parsers.
///
/// `Name` is whatever key the format compares names by (normalised text for JSON,
/// lowercased wire bytes for RFC 1035) so the walk itself is written once.
struct CNAMEChain<Name: Hashable> {
    /// Longer chains are broken zones or hostile answers; real ones stay well below.
    static var maximumLength: Int { 16 }

    enum Value {
        case address(String, IPText.Family)
        case alias(Name)
    }

    struct Record {
        var owner: Name
        var ttl: Int?
        var value: Value
    }

    struct Result {
        /// Addresses owned by the chain's last name, in answer order.
        var addresses: [(text: String, family: IPText.Family)]
        /// Min TTL over the aliases followed and the addresses used (nil if none had one).
        var ttl: Int?
    }

    private var addresses: [Name: [(text: String, family: IPText.Family, ttl: Int?)]] = [:]
    private var aliases: [Name: (target: Name, ttl: Int?)] = [:]

    /// `records` must already be limited to the asked type's addresses and CNAMEs.
    init(_ records: [Record]) {
        for record in records {
            switch record.value {
            case .address(let text, let family):
                addresses[record.owner, default: []].append((text, family, record.ttl))
            case .alias(let target):
                // A name has at most one CNAME; if a hostile answer has more, the first wins.
                if aliases[record.owner] == nil { aliases[record.owner] = (target, record.ttl) }
            }
        }
    }

    /// Walks from `start`; addresses win over a CNAME on the same name (a name with both
    /// is invalid, and an answer is more useful than an error). Throws on a loop or an
    /// over-long chain instead of guessing.
    func resolve(from start: Name) throws(WireError) -> Result {
        var current = start
        var visited: Set<Name> = [start]
        var ttl: Int?
        var hops = 0
        while true {
            if let found = addresses[current], !found.isEmpty {
                for entry in found { ttl = Self.minimum(ttl, entry.ttl) }
                return Result(addresses: found.map { ($0.text, $0.family) }, ttl: ttl)
            }
            guard let alias = aliases[current] else {
                return Result(addresses: [], ttl: ttl)
            }
            hops += 1
            guard hops <= Self.maximumLength else {
                throw .cnameChain("more than \(Self.maximumLength) CNAMEs")
            }
            guard visited.insert(alias.target).inserted else {
                throw .cnameChain("CNAME loop after \(hops) hops")
            }
            ttl = Self.minimum(ttl, alias.ttl)
            current = alias.target
        }
    }

    static func minimum(_ a: Int?, _ b: Int?) -> Int? {
        switch (a, b) {
        case let (a?, b?): return min(a, b)
        case let (a?, nil): return a
        case let (nil, b?): return b
        case (nil, nil): return nil
        }
    }
}
