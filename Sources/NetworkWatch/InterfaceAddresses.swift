import ProxyUpstream

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The addresses that say which network this host is on, compared before and after a netlink
/// event: IPv4 addresses and IPv6 /64 prefixes of interfaces that are up, without loopback,
/// link-local, multicast or unspecified ones. IPv6 counts by prefix so that privacy (temporary)
/// addresses rotating within the same /64, and SLAAC churn, are not a change; joining another
/// network changes the prefix.
package struct InterfaceAddresses: Hashable, Sendable {
    /// `10.0.0.5`, `2001:db8:1:2::/64`.
    package private(set) var keys: Set<String>

    package init(keys: Set<String> = []) {
        self.keys = keys
    }

    package var ipv4Count: Int { keys.count { !$0.contains(":") } }
    package var ipv6Count: Int { keys.count { $0.contains(":") } }

    /// Adds one interface address (4 or 16 bytes in network order); ignored when it does not
    /// identify a network.
    mutating func add(_ bytes: [UInt8]) {
        if let key = Self.key(bytes) { keys.insert(key) }
    }

    static func key(_ bytes: [UInt8]) -> String? {
        switch bytes.count {
        case 4:
            switch bytes[0] {
            case 0, 127: return nil  // unspecified "this network", loopback
            case 169 where bytes[1] == 254: return nil  // link-local
            case 224...255: return nil  // multicast, reserved, broadcast
            default: return bytes.map(String.init).joined(separator: ".")
            }
        case 16:
            if bytes[0..<15].allSatisfy({ $0 == 0 }) { return nil }  // :: and ::1
            if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return nil }  // fe80::/10
            if bytes[0] == 0xFF { return nil }  // multicast
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                return key(Array(bytes[12..<16]))  // IPv4-mapped
            }
            let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            return groups.joined(separator: ":") + "::/64"
        default:
            return nil
        }
    }

    /// The interface addresses now (getifaddrs; no traffic). Empty when getifaddrs fails.
    package static func current() -> InterfaceAddresses {
        var result = InterfaceAddresses()
        for bytes in HostAddressFamilies.upInterfaceAddresses() ?? [] { result.add(bytes) }
        return result
    }
}
