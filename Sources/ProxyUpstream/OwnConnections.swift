import NIOCore
import ProxyConfig
import Synchronization

/// The local ends (address and port) of this process's own open upstream connections. A
/// transparent connection whose client is one of them is the proxy's own connection, redirected
/// back to it by netfilter (rules that do not exempt the uid it runs as, or its mark): its
/// original destination is the origin, so without this check it would be relayed there again,
/// and redirected again, until the connection limit.
package final class OwnConnections: Sendable {
    private struct Endpoint: Hashable {
        var ip: IPAddress
        var port: Int

        init?(_ address: SocketAddress?) {
            guard let address, let port = address.port, let ip = IPAddress(address) else { return nil }
            self.ip = ip.unmappedIPv4 ?? ip
            self.port = port
        }
    }

    private let endpoints = Mutex<Set<Endpoint>>([])

    package init() {}

    /// Records `channel`'s local end until it closes. Called when its connect completes, before
    /// anything is written on it, so its first bytes can never reach the transparent listener
    /// unrecognised.
    func add(_ channel: any Channel) {
        guard let endpoint = Endpoint(channel.localAddress) else { return }
        endpoints.withLock { _ = $0.insert(endpoint) }
        channel.closeFuture.whenComplete { [self] _ in
            _ = endpoints.withLock { $0.remove(endpoint) }
        }
    }

    /// Whether `client` (a transparent connection's peer) is the local end of one of them.
    package func contains(_ client: SocketAddress?) -> Bool {
        guard let endpoint = Endpoint(client) else { return false }
        return endpoints.withLock { $0.contains(endpoint) }
    }

    var count: Int { endpoints.withLock { $0.count } }
}
