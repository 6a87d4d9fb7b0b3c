#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import HTTPDNS

/// Which address families this host can use, judged from its interface addresses (no traffic is
/// sent): IPv6 counts only with a global (non-loopback, non-link-local, non-ULA) address, since a
/// ULA or link-local address alone does not reach the Internet.
package enum HostAddressFamilies {
    package static func detect() -> AddressFamilies {
        guard let addresses = upInterfaceAddresses() else { return .ipv4 }
        // 127.0.0.0/8: first byte 127.
        let hasV4 = addresses.contains { $0.count == 4 && $0[0] != 127 }
        let hasV6 = addresses.contains { $0.count == 16 && isGlobalIPv6($0) }
        switch (hasV4, hasV6) {
        case (true, true): return .both
        case (false, true): return .ipv6
        default: return .ipv4
        }
    }

    /// The addresses of the interfaces that are up, in network byte order (4 bytes for IPv4, 16
    /// for IPv6); nil when getifaddrs fails. No traffic is sent.
    package static func upInterfaceAddresses() -> [[UInt8]]? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return nil }
        defer { freeifaddrs(list) }
        var result: [[UInt8]] = []
        var cursor = list
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, entry.pointee.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                let raw = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                result.append(withUnsafeBytes(of: raw) { Array($0) })
            case AF_INET6:
                let raw = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                result.append(withUnsafeBytes(of: raw) { Array($0) })
            default:
                continue
            }
        }
        return result
    }

    static func isGlobalIPv6(_ bytes: [UInt8]) -> Bool {
        guard bytes.count == 16 else { return false }
        if bytes.allSatisfy({ $0 == 0 }) { return false }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return false }  // ::1
        if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return false }  // fe80::/10
        if bytes[0] & 0xFE == 0xFC { return false }  // fc00::/7
        return bytes[0] & 0xE0 == 0x20  // 2000::/3 global unicast
    }
}
