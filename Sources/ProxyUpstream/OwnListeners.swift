#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore
import ProxyConfig
import Synchronization

/// The addresses this process listens on (proxy and admin). The proxy never dials them, whatever
/// `--allow-destination` says: a request through the proxy to its own admin listener would reach
/// `DELETE /cache` from anywhere the proxy port is reachable, and one to its own proxy port loops.
package final class OwnListeners: Sendable {
    private struct Listener: Sendable {
        var ip: IPAddress
        var port: Int
    }

    private let listeners = Mutex<[Listener]>([])
    /// Ports only, read on every dial: the address check runs only when the port matches.
    private let ports = Mutex<Set<Int>>([])

    package init() {}

    /// Records a bound listener (its real port, after binding to port 0).
    package func add(_ address: SocketAddress) {
        guard let port = address.port, let ip = IPAddress(address) else { return }
        let unmapped = ip.unmappedIPv4 ?? ip
        listeners.withLock { $0.append(Listener(ip: unmapped, port: port)) }
        ports.withLock { _ = $0.insert(port) }
    }

    /// Whether dialing `address` would reach one of this process's listeners: same port, and an
    /// address that lands on the listener — its own address, any loopback or unspecified address
    /// (`0.0.0.0`, `::`, IPv4-mapped forms included), or, for a wildcard listener, any address of
    /// this host's interfaces.
    package func contains(_ address: SocketAddress) -> Bool {
        guard let port = address.port, ports.withLock({ $0.contains(port) }), let raw = IPAddress(address) else { return false }
        let ip = raw.unmappedIPv4 ?? raw
        let matching = listeners.withLock { $0.filter { $0.port == port } }
        if Self.isLoopbackOrUnspecified(ip) { return true }
        for listener in matching {
            if listener.ip == ip { return true }
            if Self.isUnspecified(listener.ip) && Self.localInterfaceAddresses().contains(ip) { return true }
        }
        return false
    }

    static func isUnspecified(_ ip: IPAddress) -> Bool { ip.bytes.allSatisfy { $0 == 0 } }

    static func isLoopbackOrUnspecified(_ ip: IPAddress) -> Bool {
        if isUnspecified(ip) { return true }
        if ip.isIPv4 { return ip.bytes[0] == 127 }
        return ip.bytes.dropLast().allSatisfy { $0 == 0 } && ip.bytes.last == 1
    }

    /// This host's interface addresses, read when needed (only for a dial to a listener's port).
    static func localInterfaceAddresses() -> Set<IPAddress> {
        var result: Set<IPAddress> = []
        guard let interfaces = try? System.enumerateDevices() else { return result }
        for device in interfaces {
            if let address = device.address, let ip = IPAddress(address) { result.insert(ip.unmappedIPv4 ?? ip) }
        }
        return result
    }
}
