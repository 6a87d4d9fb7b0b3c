#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NetworkTypes

/// Validation and canonical text for IP addresses found in answers.
///
/// inet_pton decides what is an address (the same rules as the C SDKs); the text
/// is then rendered by ProxyConfig's `IPAddress` (RFC 5952, `::ffff:a.b.c.d` for
/// mapped) so both modules print one address one way and cache entries compare
/// as text.
enum IPText {
    enum Family: Sendable, Equatable { case v4, v6 }

    /// Canonical text and family, or nil for anything inet_pton rejects.
    static func canonical(_ text: String) -> (text: String, family: Family)? {
        // The longest IPv6 text form is 45 bytes; an embedded NUL would make the C
        // string end early and let "1.2.3.4\0junk" pass as 1.2.3.4.
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= 45, !utf8.contains(0) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 16)
        if utf8.contains(UInt8(ascii: ":")) {
            let ok = text.withCString { cText in
                buffer.withUnsafeMutableBytes { inet_pton(AF_INET6, cText, $0.baseAddress) }
            }
            guard ok == 1 else { return nil }
            return (format(v6: buffer), .v6)
        }
        let ok = text.withCString { cText in
            buffer.withUnsafeMutableBytes { inet_pton(AF_INET, cText, $0.baseAddress) }
        }
        guard ok == 1 else { return nil }
        return (format(v4: buffer[0..<4]), .v4)
    }

    /// Canonical text of 4 bytes (callers pass exactly 4).
    static func format<C: Collection>(v4 bytes: C) -> String where C.Element == UInt8 {
        IPAddress(bytes: bytes)?.description ?? ""
    }

    /// Canonical text of 16 bytes: RFC 5952, `::ffff:a.b.c.d` for mapped. Callers check the
    /// length; shorter input is padded with zeros, never trapped on.
    static func format(v6 input: [UInt8]) -> String {
        var bytes = Array(input.prefix(16))
        while bytes.count < 16 { bytes.append(0) }
        return IPAddress(bytes: bytes)?.description ?? ""
    }
}
