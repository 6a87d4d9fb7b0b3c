import NIOCore
import ProxyConfig
import Synchronization

/// Both ends (address and port) of this process's own open upstream connections. A transparent
/// connection whose client is the local end of one of them and whose original destination is
/// that one's remote end is the proxy's own connection, redirected back to it by netfilter (rules
/// that do not exempt the uid it runs as, or its mark): without this check it would be relayed
/// to the origin again, and redirected again, until the connection limit. The local end alone
/// is not enough: on an address the proxy shares (a pod's), an app's connection may use a port
/// number one of the proxy's connections also uses, to another destination.
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

    private struct Pair: Hashable {
        var local: Endpoint
        var remote: Endpoint
    }

    private let pairs = Mutex<Set<Pair>>([])

    package init() {}

    /// Records `channel`'s two ends until it closes. Called when its connect completes, before
    /// anything is written on it, so its first bytes can never reach the transparent listener
    /// unrecognised.
    func add(_ channel: any Channel) {
        guard let local = Endpoint(channel.localAddress), let remote = Endpoint(channel.remoteAddress) else { return }
        let pair = Pair(local: local, remote: remote)
        pairs.withLock { _ = $0.insert(pair) }
        channel.closeFuture.whenComplete { [self] _ in
            _ = pairs.withLock { $0.remove(pair) }
        }
    }

    /// Whether a transparent connection from `client` (its peer) to `original` (its original
    /// destination) is one of them.
    package func contains(client: SocketAddress?, original: SocketAddress?) -> Bool {
        guard let local = Endpoint(client), let remote = Endpoint(original) else { return false }
        return pairs.withLock { $0.contains(Pair(local: local, remote: remote)) }
    }

    var count: Int { pairs.withLock { $0.count } }
}
