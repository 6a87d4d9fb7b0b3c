/// An address block such as `10.0.0.0/8` or `fd00::/8`.
///
/// Parsing is lenient about host bits: `10.1.2.3/8` is accepted and stored as
/// `10.0.0.0/8`, because operators often paste an address plus the prefix of
/// its network and the intent is unambiguous. A bare address means a single
/// host (`/32` or `/128`).
public struct CIDR: Sendable, Hashable {
    /// The first address of the block (host bits zeroed).
    public let network: IPAddress
    /// Number of leading bits that are fixed: 0...32 for IPv4, 0...128 for IPv6.
    public let prefixLength: Int

    /// A block from an address and prefix length; host bits of `address` are cleared.
    /// `nil` when the prefix is out of range for the address family.
    public init?(address: IPAddress, prefixLength: Int) {
        let maxPrefix = address.bytes.count * 8
        guard (0...maxPrefix).contains(prefixLength) else { return nil }
        self.network = IPAddress(validatedBytes: CIDR.mask(address.bytes, prefixLength: prefixLength))
        self.prefixLength = prefixLength
    }

    /// Parses "address/prefix" or a bare address; `nil` for anything else.
    public init?(_ text: String) {
        guard let parsed = try? CIDR(text: text) else { return nil }
        self = parsed
    }

    /// Parses like `init?(_:)` but explains what is wrong.
    public init(text: String) throws(NetworkValueError) {
        let addressText: Substring
        let prefixText: Substring?
        if let slash = text.firstIndex(of: "/") {
            addressText = text[..<slash]
            prefixText = text[text.index(after: slash)...]
        } else {
            addressText = text[...]
            prefixText = nil
        }
        guard let address = IPAddress(String(addressText)) else {
            throw NetworkValueError(reason: "expected a CIDR block like 10.0.0.0/8 or fd00::/8, or a single address; '\(addressText)' is not an IP address")
        }
        let maxPrefix = address.bytes.count * 8
        var prefix = maxPrefix
        if let prefixText {
            guard !prefixText.isEmpty, prefixText.count <= 3,
                  prefixText.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let value = Int(prefixText), value <= maxPrefix
            else {
                throw NetworkValueError(reason: "prefix length '/\(prefixText)' must be a number 0...\(maxPrefix) for \(address.isIPv4 ? "IPv4" : "IPv6")")
            }
            prefix = value
        }
        // The prefix was range-checked above, so this cannot fail.
        self.init(address: address, prefixLength: prefix)!
    }

    /// Whether `ip` lies in this block.
    ///
    /// An IPv4 block also matches the IPv4-mapped IPv6 form of its addresses
    /// (`::ffff:10.1.2.3` is in `10.0.0.0/8`), since dual-stack sockets report
    /// IPv4 peers that way. The reverse is not done: an IPv6 block only matches
    /// IPv6 addresses, so `::/0` does not silently cover all of IPv4.
    /// Compared byte by byte in place: no masked copy (the DNS listener and the proxy's
    /// admission check a client on every query and connection).
    public func contains(_ ip: IPAddress) -> Bool {
        var candidate = ip.bytes[...]
        if network.isIPv4 && !ip.isIPv4 {
            // The IPv4-mapped form, ::ffff:a.b.c.d, read in place (as `unmappedIPv4` would).
            guard candidate.count == 16, candidate[0..<10].allSatisfy({ $0 == 0 }), candidate[10] == 0xff, candidate[11] == 0xff else {
                return false
            }
            candidate = candidate[12..<16]
        }
        guard candidate.count == network.bytes.count else { return false }
        for (offset, (byte, networkByte)) in zip(candidate, network.bytes).enumerated() {
            let bitsInThisByte = max(0, min(8, prefixLength - offset * 8))
            if bitsInThisByte == 0 { return true }
            let byteMask: UInt8 = ~UInt8(0) << (8 - bitsInThisByte)
            // `network` has its host bits cleared already.
            if byte & byteMask != networkByte { return false }
        }
        return true
    }

    private static func mask(_ bytes: [UInt8], prefixLength: Int) -> [UInt8] {
        var result = bytes
        for i in result.indices {
            let bitsInThisByte = max(0, min(8, prefixLength - i * 8))
            let byteMask: UInt8 = bitsInThisByte == 0 ? 0 : ~UInt8(0) << (8 - bitsInThisByte)
            result[i] &= byteMask
        }
        return result
    }
}

extension CIDR: CustomStringConvertible, LosslessStringConvertible {
    /// "network/prefix" with the network in canonical form, e.g. "10.0.0.0/8".
    public var description: String { "\(network)/\(prefixLength)" }
}
