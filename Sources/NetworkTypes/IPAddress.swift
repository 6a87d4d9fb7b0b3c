/// An IPv4 or IPv6 address, held as its 4 or 16 network-order bytes.
///
/// Parsing is deliberately strict because these addresses feed the SSRF guard
/// (`DestinationPolicy`): every text form that the C library would read
/// differently from a human (octal "010", short "10.1", hex "0x7f.1") is
/// rejected instead of guessed at.
public struct IPAddress: Sendable, Hashable {
    /// The address in network byte order: 4 bytes for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    /// Wraps raw network-order bytes; `nil` unless there are exactly 4 or 16.
    public init?<Bytes: Collection>(bytes: Bytes) where Bytes.Element == UInt8 {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = Array(bytes)
    }

    /// Parses dotted-quad IPv4 or RFC 4291 IPv6 text; `nil` for anything else.
    ///
    /// IPv6 zone ids ("fe80::1%eth0") are rejected: a zone names an interface
    /// of this host, which has no meaning in a proxy's configuration or policy.
    public init?(_ text: String) {
        let utf8 = Array(text.utf8)
        if let v4 = IPAddress.parseIPv4(utf8[...]) {
            self.bytes = v4
        } else if let v6 = IPAddress.parseIPv6(utf8[...]) {
            self.bytes = v6
        } else {
            return nil
        }
    }

    /// Parses like `init?(_:)` but explains what is wrong.
    public init(text: String) throws(NetworkValueError) {
        guard let address = IPAddress(text) else {
            let reason: String
            if text.contains("%") {
                reason = "IPv6 zone ids like %eth0 are not supported"
            } else {
                reason = "expected an IPv4 address like 192.0.2.1 (no leading zeros) or an IPv6 address like 2001:db8::1"
            }
            throw NetworkValueError(reason: reason)
        }
        self = address
    }

    /// True for 4-byte addresses. An IPv4-mapped IPv6 address is *not* IPv4; see `unmappedIPv4`.
    public var isIPv4: Bool { bytes.count == 4 }

    /// 127.0.0.0/8 or ::1 (an IPv4-mapped loopback address counts too).
    public var isLoopback: Bool {
        if let v4 = unmappedIPv4 { return v4.isLoopback }
        if isIPv4 { return bytes[0] == 127 }
        return bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
    }

    /// The embedded IPv4 address when this is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
    ///
    /// Dual-stack sockets report IPv4 peers in this form, so policy checks must
    /// look through it or `::ffff:127.0.0.1` would slip past a loopback rule.
    public var unmappedIPv4: IPAddress? {
        guard bytes.count == 16,
              bytes[0..<10].allSatisfy({ $0 == 0 }),
              bytes[10] == 0xff, bytes[11] == 0xff
        else { return nil }
        return IPAddress(validatedBytes: Array(bytes[12..<16]))
    }

    /// The IPv4-mapped IPv6 form (`::ffff:a.b.c.d`) of an IPv4 address; IPv6 addresses are returned unchanged.
    public var mappedIPv6: IPAddress {
        guard isIPv4 else { return self }
        return IPAddress(validatedBytes: Array(repeating: 0, count: 10) + [0xff, 0xff] + bytes)
    }

    /// For callers that already guarantee a 4- or 16-byte array.
    package init(validatedBytes: [UInt8]) {
        assert(validatedBytes.count == 4 || validatedBytes.count == 16)
        self.bytes = validatedBytes
    }
}

extension IPAddress: LosslessStringConvertible {}

// MARK: - Parsing

extension IPAddress {
    /// Strict dotted quad: exactly four decimal parts 0-255 without leading zeros,
    /// because inet_aton reads "010" as octal 8 and we refuse to disagree with it silently.
    package static func parseIPv4(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var result: [UInt8] = []
        result.reserveCapacity(4)
        for part in text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            guard !part.isEmpty, part.count <= 3,
                  part.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
            else { return nil }
            if part.count > 1 && part.first == UInt8(ascii: "0") { return nil }
            let value = part.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            guard value <= 255 else { return nil }
            result.append(UInt8(value))
        }
        return result.count == 4 ? result : nil
    }

    /// RFC 4291 section 2.2 text forms: eight groups, one optional "::", and an
    /// optional trailing dotted quad standing for the last two groups.
    package static func parseIPv6(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        let colon = UInt8(ascii: ":")
        // Locate a single "::"; a second one would make the zero run ambiguous.
        var doubleColon: ArraySlice<UInt8>.Index?
        var index = text.startIndex
        while index < text.endIndex {
            if text[index] == colon, index + 1 < text.endIndex, text[index + 1] == colon {
                if doubleColon != nil { return nil }
                doubleColon = index
                index += 2
            } else {
                index += 1
            }
        }

        let head: ArraySlice<UInt8>
        let tail: ArraySlice<UInt8>
        if let doubleColon {
            head = text[text.startIndex..<doubleColon]
            tail = text[(doubleColon + 2)...]
        } else {
            head = text
            tail = []
        }

        guard let headGroups = parseGroups(head, mayEndWithIPv4: doubleColon == nil),
              let tailGroups = parseGroups(tail, mayEndWithIPv4: true)
        else { return nil }

        let explicit = headGroups.count + tailGroups.count
        if doubleColon == nil {
            guard explicit == 8 else { return nil }
        } else {
            // "::" stands for at least one zero group (RFC 4291), so 8 explicit groups plus "::" is invalid.
            guard explicit <= 7 else { return nil }
        }
        let groups = headGroups + Array(repeating: 0, count: 8 - explicit) + tailGroups
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for group in groups {
            bytes.append(UInt8(group >> 8))
            bytes.append(UInt8(group & 0xff))
        }
        return bytes
    }

    /// Colon-separated 1-4 digit hex groups; an empty input is zero groups.
    private static func parseGroups(_ text: ArraySlice<UInt8>, mayEndWithIPv4: Bool) -> [UInt16]? {
        if text.isEmpty { return [] }
        let parts = text.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        var groups: [UInt16] = []
        for (offset, part) in parts.enumerated() {
            if offset == parts.count - 1, mayEndWithIPv4, part.contains(UInt8(ascii: ".")) {
                guard let v4 = parseIPv4(part) else { return nil }
                groups.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                groups.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
                continue
            }
            guard !part.isEmpty, part.count <= 4 else { return nil }
            var value: UInt16 = 0
            for byte in part {
                guard let digit = hexValue(byte) else { return nil }
                value = value << 4 | UInt16(digit)
            }
            groups.append(value)
        }
        return groups
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
