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
    package func ordered(_ addresses: [SocketAddress], now: NIODeadline) -> [SocketAddress] {
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
            let rank = UpstreamEndpoint(address).map { Self.rank(entries[$0], now: now) } ?? (group: 1, key: 0)
            ranked.append(Ranked(address: address, group: rank.group, key: rank.key, index: index))
        }
        ranked.sort { ($0.group, $0.key, $0.index) < ($1.group, $1.key, $1.index) }
        let usable = ranked.filter { $0.group < 3 }.map(\.address)
        let backingOff = ranked.filter { $0.group == 3 }.map(\.address)
        return Self.interleavingFamilies(usable) + Self.interleavingFamilies(backingOff)
    }

    /// Where an endpoint sorts (group 0...3 as `ordered` lists them, then the key within the group);
    /// an unknown endpoint is healthy and never connected.
    static func rank(_ entry: Entry?, now: NIODeadline) -> (group: Int, key: Double) {
        guard let entry else { return (1, 0) }
        switch state(entry, now: now) {
        case .healthy: return entry.connectEWMA.map { (0, $0) } ?? (1, 0)
        case .retry: return (2, Double(entry.consecutiveFailures))
        case .backoff: return (3, entry.backoffUntil.map { Double(($0 - now).nanoseconds) } ?? 0)
        }
    }

    /// `ips` (one family) in the order the DNS listener answers with, when the port the client will
    /// dial is unknown: each IP is judged by its `preferredPort` endpoint when the table knows it
    /// (443: most names are dialled there), else by the best of the ports it knows for the IP. One
    /// closed port does not make a host dead; a host that failed on every port it was tried on
    /// (down, unreachable) goes last whatever the port.
    package func ordered(ips: [String], preferringPort preferredPort: Int, now: NIODeadline) -> [String] {
        let addresses = ips.compactMap { ip -> SocketAddress? in
            var port = preferredPort
            if let ports = portsByIP[ip], !ports.contains(preferredPort) {
                port = ports.min { a, b in
                    let (ra, rb) = (Self.rank(entries[UpstreamEndpoint(ip: ip, port: a)], now: now), Self.rank(entries[UpstreamEndpoint(ip: ip, port: b)], now: now))
                    return (ra.group, ra.key) < (rb.group, rb.key)
                } ?? preferredPort
            }
            return try? SocketAddress(ipAddress: ip, port: port)
        }
        return ordered(addresses, now: now).compactMap(\.ipAddress)
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
