#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Validation and canonical text for IP addresses found in answers.
///
/// inet_pton decides what is an address (the same rules as the C SDKs); the text
/// is then re-rendered with the same rules as ProxyConfig's `IPAddress` (RFC 5952,
/// `::ffff:a.b.c.d` for mapped) so both modules print one address one way and
/// cache entries compare as text.
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

    static func format<C: Collection>(v4 bytes: C) -> String where C.Element == UInt8 {
        bytes.map(String.init).joined(separator: ".")
    }

    /// `bytes` must hold 16 bytes (callers check; shorter input is padded, never trapped on).
    static func format(v6 input: [UInt8]) -> String {
        var bytes = Array(input.prefix(16))
        while bytes.count < 16 { bytes.append(0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return "::ffff:" + format(v4: bytes[12..<16])
        }
        var groups: [UInt16] = []
        groups.reserveCapacity(8)
        for i in stride(from: 0, to: 16, by: 2) {
            groups.append(UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]))
        }
        // Longest run of zero groups (first on a tie); RFC 5952 4.2.2: never for a single group.
        var bestStart = -1
        var bestLength = 0
        var runStart = -1
        for (i, group) in groups.enumerated() {
            if group == 0 {
                if runStart < 0 { runStart = i }
                let length = i - runStart + 1
                if length > bestLength {
                    bestStart = runStart
                    bestLength = length
                }
            } else {
                runStart = -1
            }
        }
        func hex(_ slice: ArraySlice<UInt16>) -> String {
            slice.map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard bestLength >= 2 else { return hex(groups[...]) }
        return hex(groups[0..<bestStart]) + "::" + hex(groups[(bestStart + bestLength)...])
    }
}
