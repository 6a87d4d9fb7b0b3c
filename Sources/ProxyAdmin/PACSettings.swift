import NIOCore
import ProxyConfig

/// What `/proxy.pac` is made from: the configured `pac-proxy` and `pac-bypass`, and the proxy's
/// listen address for when no `pac-proxy` is set.
package struct PACSettings: Sendable {
    package var configured: HostPort?
    package var listen: HostPort
    package var bypass: [DestinationPattern]
    /// The proxy's bound address, once it listens (a configured port 0 becomes the real port).
    package var boundAddress: @Sendable () -> SocketAddress?

    package init(
        configured: HostPort?, listen: HostPort, bypass: [DestinationPattern],
        boundAddress: @escaping @Sendable () -> SocketAddress? = { nil }
    ) {
        self.configured = configured
        self.listen = listen
        self.bypass = bypass
        self.boundAddress = boundAddress
    }

    /// The `host:port` the PAC file names: `pac-proxy` when set; else the listen host with the bound
    /// port; when the proxy listens on a wildcard address (0.0.0.0, ::), which no client can dial,
    /// the host the PAC file was requested with (`Host` header, validated), else 127.0.0.1.
    package func proxyAddress(requestHost: String?) -> HostPort {
        if let configured { return configured }
        let port = boundAddress()?.port ?? listen.port
        guard let ip = listen.ipAddress, ip.bytes.allSatisfy({ $0 == 0 }) else {
            return HostPort(host: listen.host, port: port)
        }
        let host = requestHost.flatMap(Self.hostPart) ?? "127.0.0.1"
        return HostPort(host: host, port: port)
    }

    /// The host of a `Host` header value ("name", "name:port", "[v6]:port"), nil unless valid.
    static func hostPart(_ header: String) -> String? {
        let text = header
        guard !text.isEmpty, text.utf8.count <= 300 else { return nil }
        let parsed = HostPort(text) ?? HostPort(text + ":1")
        guard let host = parsed?.host, !host.isEmpty else { return nil }
        if let ip = IPAddress(host), ip.bytes.allSatisfy({ $0 == 0 }) { return nil }
        return host
    }
}
