import NIOCore

extension SocketAddress {
    /// The address as logs, records and messages show it: `ip:port`, `[ipv6]:port`; anything
    /// else (a Unix socket) as NIO describes it.
    package var endpointText: String {
        guard let ip = ipAddress, let port else { return "\(self)" }
        return self.protocol == .inet6 ? "[\(ip)]:\(port)" : "\(ip):\(port)"
    }
}
