#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import HTTPDNS

/// Which address families this host can use, judged from its interface addresses (no traffic is
/// sent): IPv6 counts only with a global (non-loopback, non-link-local, non-ULA) address, since a
/// ULA or link-local address alone does not reach the Internet.
public enum HostAddressFamilies {
    public static func detect() -> AddressFamilies {
        var hasV4 = false
        var hasV6 = false
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return .ipv4 }
        defer { freeifaddrs(list) }
        var cursor = list
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, entry.pointee.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                let v4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
                // 127.0.0.0/8 in network byte order: first byte 127.
                if UInt32(bigEndian: v4) >> 24 != 127 { hasV4 = true }
            case AF_INET6:
                let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                }
                if isGlobalIPv6(bytes) { hasV6 = true }
            default:
                continue
            }
        }
        switch (hasV4, hasV6) {
        case (true, true): return .both
        case (false, true): return .ipv6
        default: return .ipv4
        }
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
