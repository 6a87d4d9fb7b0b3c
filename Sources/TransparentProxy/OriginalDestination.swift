#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore

/// The address a redirected connection was sent to before netfilter's REDIRECT rewrote it:
/// `SO_ORIGINAL_DST` (IPv4, also for IPv4-mapped peers of a dual-stack listener) or
/// `IP6T_SO_ORIGINAL_DST` (IPv6), both read from conntrack.
package enum OriginalDestination {
    /// How the transparent handler learns where a connection was sent (on the channel's loop;
    /// nil: not redirected).
    package typealias Reader = @Sendable (any Channel) -> EventLoopFuture<SocketAddress?>

    /// SO_ORIGINAL_DST and IP6T_SO_ORIGINAL_DST share the value 80 (linux/netfilter_ipv4.h, ip6_tables.h).
    static let option: Int32 = 80
    static let levelIPv4 = SocketOptionLevel(IPPROTO_IP)
    static let levelIPv6 = SocketOptionLevel(IPPROTO_IPV6)

    /// Reads the original destination of `channel` (on its event loop); nil when the socket has
    /// none (not redirected, or no conntrack entry).
    package static func read(_ channel: any Channel) -> EventLoopFuture<SocketAddress?> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        let ipv4: EventLoopFuture<SocketAddress?> = provider.unsafeGetSocketOption(
            level: levelIPv4, name: SocketOptionName(option)
        ).map { (address: sockaddr_in) -> SocketAddress? in
            address.sin_family == sa_family_t(AF_INET) ? SocketAddress(address, host: "") : nil
        }
        guard channel.remoteAddress?.protocol == .inet6 else {
            return ipv4.recover { _ in nil }
        }
        // A dual-stack listener: IPv4 peers (mapped) answer the IPv4 option, IPv6 peers the IPv6 one.
        return ipv4.flatMapError { _ in
            provider.unsafeGetSocketOption(level: levelIPv6, name: SocketOptionName(option)).map { (address: sockaddr_in6) -> SocketAddress? in
                address.sin6_family == sa_family_t(AF_INET6) ? SocketAddress(address, host: "") : nil
            }
        }.recover { _ in nil }
    }
}
