extension ProxyConfiguration {
    /// The listeners the configuration binds, each with its option, in `--help` order. All are
    /// TCP (the DNS listener binds UDP and TCP on its address), so any two can collide.
    var listeners: [(option: ConfigOption, address: HostPort)] {
        let all: [(ConfigOption, HostPort?)] = [
            (.listen, listen), (.adminListen, adminListen), (.socksListen, socksListen), (.tlsListen, tlsListen), (.transparentListen, transparentListen),
            (.dnsListen, dnsListen), (.dohListen, dohListen),
        ]
        return all.compactMap { option, address in address.map { (option, $0) } }
    }

    /// The first two listeners that cannot both bind, or nil. Port 0 never collides (the kernel
    /// picks a free port each time).
    func collidingListeners() -> (first: (option: ConfigOption, address: HostPort), second: (option: ConfigOption, address: HostPort))? {
        let bound = listeners.filter { $0.address.port != 0 }
        for (index, first) in bound.enumerated() {
            for second in bound[(index + 1)...] where Self.collide(first.address, second.address) {
                return (first, second)
            }
        }
        return nil
    }

    /// Whether two listeners on the same port collide: the same host, or one on the wildcard
    /// address that covers the other (0.0.0.0 every IPv4 address; [::] every address, as Linux
    /// binds it dual-stack). Names are compared as written.
    static func collide(_ a: HostPort, _ b: HostPort) -> Bool {
        guard a.port == b.port else { return false }
        if a.host == b.host { return true }
        func covers(_ wildcard: HostPort, _ other: HostPort) -> Bool {
            guard let address = IPAddress(wildcard.host), address.bytes.allSatisfy({ $0 == 0 }) else { return false }
            if !address.isIPv4 { return true }
            return IPAddress(other.host)?.isIPv4 ?? (other.host == "localhost")
        }
        return covers(a, b) || covers(b, a)
    }
}
