import NIOCore

extension IPHealthTable {
    /// The order to dial `addresses` in (Happy Eyeballs tries them in this order, 250 ms apart):
    /// 1. healthy endpoints with a learned connect time, fastest first;
    /// 2. healthy endpoints never connected yet, in the resolver's order;
    /// 3. endpoints whose back-off is over but which have not succeeded since (fewest failures first);
    /// 4. endpoints in back-off, the one whose back-off ends soonest first: still tried when
    ///    nothing else works.
    /// Within the first three groups together, and within the fourth, address families alternate
    /// (RFC 8305 §4) starting with the family of the best address. Duplicates are dropped.
    public func ordered(_ addresses: [SocketAddress], now: NIODeadline) -> [SocketAddress] {
        struct Ranked {
            var address: SocketAddress
            var group: Int
            var key: Double
            var index: Int
        }
        var seen = Set<String>()
        var ranked: [Ranked] = []
        ranked.reserveCapacity(addresses.count)
        for (index, address) in addresses.enumerated() {
            guard seen.insert(address.ipAddress ?? "\(address)").inserted else { continue }
            guard let endpoint = UpstreamEndpoint(address), let entry = entries[endpoint] else {
                ranked.append(Ranked(address: address, group: 1, key: 0, index: index))
                continue
            }
            switch Self.state(entry, now: now) {
            case .healthy:
                if let average = entry.connectEWMA {
                    ranked.append(Ranked(address: address, group: 0, key: average, index: index))
                } else {
                    ranked.append(Ranked(address: address, group: 1, key: 0, index: index))
                }
            case .retry:
                ranked.append(Ranked(address: address, group: 2, key: Double(entry.consecutiveFailures), index: index))
            case .backoff:
                let remaining = entry.backoffUntil.map { Double(($0 - now).nanoseconds) } ?? 0
                ranked.append(Ranked(address: address, group: 3, key: remaining, index: index))
            }
        }
        ranked.sort { ($0.group, $0.key, $0.index) < ($1.group, $1.key, $1.index) }
        let usable = ranked.filter { $0.group < 3 }.map(\.address)
        let backingOff = ranked.filter { $0.group == 3 }.map(\.address)
        return Self.interleavingFamilies(usable) + Self.interleavingFamilies(backingOff)
    }

    /// RFC 8305 §4: the first address keeps its place, then the families alternate, each family
    /// keeping its own order; when one family runs out the rest of the other follows.
    static func interleavingFamilies(_ addresses: [SocketAddress]) -> [SocketAddress] {
        guard let first = addresses.first else { return [] }
        var preferred = addresses.filter { $0.protocol == first.protocol }[...]
        var other = addresses.filter { $0.protocol != first.protocol }[...]
        var result: [SocketAddress] = []
        result.reserveCapacity(addresses.count)
        while !preferred.isEmpty || !other.isEmpty {
            if let next = preferred.popFirst() { result.append(next) }
            if let next = other.popFirst() { result.append(next) }
        }
        return result
    }
}
