#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ProxyConfig

/// The nameservers of a resolv.conf, the DNS listener's default upstreams.
enum ResolvConf {
    /// `nameserver` lines' addresses in order (port 53), without duplicates; zone ids and anything
    /// that is not an IP address are skipped.
    static func nameservers(_ text: String) -> [HostPort] {
        var servers: [HostPort] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words[0] == "nameserver", let address = IPAddress(String(words[1])) else { continue }
            let server = HostPort(host: address.description, port: 53)
            if !servers.contains(server) { servers.append(server) }
        }
        return servers
    }

    static func nameservers(path: String = "/etc/resolv.conf") -> [HostPort] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return nameservers(String(decoding: data, as: UTF8.self))
    }

    /// `upstreams` without the listener itself: an upstream on the listener's port at its address,
    /// or at a loopback address when the listener is bound to every address, would be a loop.
    static func excludingListener(_ upstreams: [HostPort], listener: HostPort) -> [HostPort] {
        let listenAddress = IPAddress(listener.host)
        let wildcard = listenAddress.map { $0.bytes.allSatisfy { $0 == 0 } } ?? false
        return upstreams.filter { upstream in
            guard upstream.port == listener.port, let address = IPAddress(upstream.host) else { return true }
            if address == listenAddress { return false }
            return !(wildcard && address.isLoopback)
        }
    }
}
