import ProxyConfig

/// The SOCKS version a client spoke: 5 (RFC 1928), or 4 with its 4a extension (a name instead of
/// an address).
package enum SOCKSVersion: Sendable, Equatable {
    case v5
    case v4
}

/// Where a SOCKS client asked to connect: a name (SOCKS5 ATYP 3, SOCKS4a), which goes through
/// HTTPDNS like any proxied host, or an address the client resolved itself.
package enum SOCKSDestination: Sendable, Equatable, CustomStringConvertible {
    case name(String)
    case address(IPAddress)

    package var description: String {
        switch self {
        case .name(let name): name
        case .address(let address): address.isIPv4 ? "\(address)" : "[\(address)]"
        }
    }
}

/// A CONNECT the handshake accepted, with what the access log names: the client's version and
/// user (SOCKS5 username/password, or the SOCKS4 user id, which is never a credential).
package struct SOCKSRequest: Sendable, Equatable {
    package var version: SOCKSVersion
    package var destination: SOCKSDestination
    package var port: Int
    package var user: String?
}

/// RFC 1928 §6 reply codes (REP), and SOCKS4's two (CD 90 granted, 91 rejected).
package enum SOCKSReplyCode: UInt8, Sendable, Equatable {
    case succeeded = 0x00
    case generalFailure = 0x01
    case notAllowed = 0x02
    case networkUnreachable = 0x03
    case hostUnreachable = 0x04
    case connectionRefused = 0x05
    case ttlExpired = 0x06
    case commandNotSupported = 0x07
    case addressTypeNotSupported = 0x08

    static let socks4Granted: UInt8 = 0x5A
    static let socks4Rejected: UInt8 = 0x5B
}
