import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension IPAddress {
    /// The IP of a resolved NIO socket address; `nil` for Unix domain sockets.
    ///
    /// Reads the raw `in_addr`/`in6_addr` bytes rather than re-parsing text so
    /// the guard sees exactly what the kernel will dial (a zone id, if any, is dropped).
    public init?(_ address: SocketAddress) {
        switch address {
        case .v4(let v4):
            var raw = v4.address.sin_addr
            self.init(validatedBytes: withUnsafeBytes(of: &raw) { Array($0) })
        case .v6(let v6):
            var raw = v6.address.sin6_addr
            self.init(validatedBytes: withUnsafeBytes(of: &raw) { Array($0) })
        case .unixDomainSocket:
            return nil
        }
    }
}
