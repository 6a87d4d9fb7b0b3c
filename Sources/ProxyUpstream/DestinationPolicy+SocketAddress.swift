import NIOCore
import ProxyConfig

extension DestinationPolicy {
    /// Why dialing `address` is forbidden, or nil when it is allowed.
    package func denialReason(for address: SocketAddress) -> String? {
        guard let ip = IPAddress(address) else { return "\(address) is not an IP address" }
        switch evaluate(ip) {
        case .allowed: return nil
        case .denied(let reason): return reason
        }
    }
}
