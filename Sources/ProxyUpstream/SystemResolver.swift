#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore
import NIOPosix

/// getaddrinfo on a thread pool, never on an event loop.
package struct SystemResolver: UpstreamResolver {
    private let threadPool: @Sendable () -> NIOThreadPool

    package init(threadPool: NIOThreadPool) {
        self.threadPool = { threadPool }
    }

    /// On NIO's shared blocking pool, which is started by its first use: asked for here at the
    /// first lookup, not at start-up, so a proxy that never falls back to system DNS has none of
    /// its threads.
    package init() {
        self.threadPool = { NIOThreadPool.singleton }
    }

    package func resolve(host: String, port: Int, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution> {
        threadPool().runIfActive(eventLoop: eventLoop) {
            try Resolution(addresses: Self.getaddrinfo(host: host, port: port), source: .system)
        }
    }

    package static func getaddrinfo(host: String, port: Int) throws -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = Glibc.getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0 else {
            throw SystemResolverError(host: host, reason: String(cString: gai_strerror(rc)))
        }
        defer { freeaddrinfo(result) }
        var addresses: [SocketAddress] = []
        var seen = Set<String>()
        var cursor = result
        while let info = cursor {
            defer { cursor = info.pointee.ai_next }
            guard let sa = info.pointee.ai_addr else { continue }
            let address: SocketAddress
            switch info.pointee.ai_family {
            case AF_INET:
                address = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { SocketAddress($0.pointee, host: host) }
            case AF_INET6:
                address = sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { SocketAddress($0.pointee, host: host) }
            default:
                continue
            }
            if seen.insert(address.description).inserted { addresses.append(address) }
        }
        guard !addresses.isEmpty else {
            throw SystemResolverError(host: host, reason: "no addresses")
        }
        return addresses
    }
}

package struct SystemResolverError: Error, CustomStringConvertible {
    package let host: String
    package let reason: String
    package var description: String { "system DNS could not resolve \(host): \(reason)" }
}
