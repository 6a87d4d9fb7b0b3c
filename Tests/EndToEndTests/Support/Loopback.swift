import Glibc

/// Helpers around loopback sockets that tests share: a free port, IPv6 availability, sockaddr building.
enum Loopback {
    /// A TCP port on `host` that nothing listens on right now: bound to port 0, read back, closed.
    /// A loopback address no test server ever binds: connections to any port there are refused.
    /// Dead endpoints must not share an address with servers that bind port 0 concurrently, or a
    /// parallel test may be listening on the "dead" port.
    static let deadHost = "127.0.0.66"

    static func unusedPort(host: String = "127.0.0.1") throws -> Int {
        let fd = try boundSocket(host: host, port: 0)
        defer { Glibc.close(fd) }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { throw RawClient.Failure.io("getsockname", errno) }
        let family = storage.ss_family
        return withUnsafePointer(to: &storage) { pointer -> Int in
            if family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }

    /// True when a TCP socket can be bound on ::1 (IPv6 loopback configured).
    static let ipv6Available: Bool = {
        guard let fd = try? boundSocket(host: "::1", port: 0) else { return false }
        Glibc.close(fd)
        return true
    }()

    private static func boundSocket(host: String, port: Int) throws -> Int32 {
        let (storage, length) = try socketAddress(host: host, port: port)
        let fd = socket(Int32(storage.ss_family), Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw RawClient.Failure.io("socket", errno) }
        var address = storage
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard rc == 0 else {
            let error = errno
            Glibc.close(fd)
            throw RawClient.Failure.io("bind \(host)", error)
        }
        return fd
    }

    /// A sockaddr for a numeric IPv4 or IPv6 address (brackets allowed around IPv6).
    static func socketAddress(host: String, port: Int) throws -> (sockaddr_storage, socklen_t) {
        var storage = sockaddr_storage()
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(port).bigEndian
            guard inet_pton(AF_INET6, bare, &address.sin6_addr) == 1 else {
                throw RawClient.Failure.malformed("not a numeric IPv6 address: \(host)")
            }
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee = address }
            }
            return (storage, socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        guard inet_pton(AF_INET, bare, &address.sin_addr) == 1 else {
            throw RawClient.Failure.malformed("not a numeric IPv4 address: \(host)")
        }
        withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee = address }
        }
        return (storage, socklen_t(MemoryLayout<sockaddr_in>.size))
    }
}
