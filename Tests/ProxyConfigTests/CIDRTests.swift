import Testing
@testable import ProxyConfig

@Suite struct CIDRTests {
    @Test(arguments: [
        ("10.0.0.0/8", "10.0.0.0/8"),
        ("fd00::/8", "fd00::/8"),
        ("0.0.0.0/0", "0.0.0.0/0"),
        ("::/0", "::/0"),
        // A bare address is a single host.
        ("192.0.2.7", "192.0.2.7/32"),
        ("2001:db8::1", "2001:db8::1/128"),
        // Host bits are cleared, not rejected.
        ("10.1.2.3/8", "10.0.0.0/8"),
        ("172.31.255.255/12", "172.16.0.0/12"),
        ("2001:db8::ffff/32", "2001:db8::/32"),
        ("fe80::1/10", "fe80::/10"),
        ("192.168.1.130/25", "192.168.1.128/25"),
    ])
    func parsesAndNormalizes(text: String, canonical: String) throws {
        let cidr = try #require(CIDR(text))
        #expect(cidr.description == canonical)
    }

    @Test(arguments: ["", "/8", "10.0.0.0/", "10.0.0.0/33", "::/129", "10.0.0.0/-1", "10.0.0.0/8/8", "10.0.0/8", "10.0.0.0/a", "10.0.0.0/ 8", "host/8"])
    func rejectsBadText(text: String) {
        #expect(CIDR(text) == nil)
    }

    @Test func prefixOutOfRangeIsExplained() {
        #expect(throws: ConfigurationError.malformedValue(reason: "prefix length '/33' must be a number 0...32 for IPv4")) {
            try CIDR(parsing: "10.0.0.0/33")
        }
    }

    @Test func containsByPrefix() throws {
        let net = try #require(CIDR("172.16.0.0/12"))
        #expect(net.contains(IPAddress("172.16.0.0")!))
        #expect(net.contains(IPAddress("172.31.255.255")!))
        #expect(!net.contains(IPAddress("172.32.0.0")!))
        #expect(!net.contains(IPAddress("172.15.255.255")!))
        let v6 = try #require(CIDR("fe80::/10"))
        #expect(v6.contains(IPAddress("febf:ffff::1")!))
        #expect(!v6.contains(IPAddress("fec0::1")!))
        #expect(CIDR("0.0.0.0/0")!.contains(IPAddress("8.8.8.8")!))
        #expect(CIDR("1.2.3.4")!.contains(IPAddress("1.2.3.4")!))
        #expect(!CIDR("1.2.3.4")!.contains(IPAddress("1.2.3.5")!))
    }

    /// `contains` compares in place; here against masking both sides, for every prefix of both
    /// families and addresses around each block's edges (and the mapped form of the IPv4 ones).
    @Test func containsAgreesWithMaskingEveryPrefix() throws {
        func masked(_ bytes: [UInt8], _ prefix: Int) -> [UInt8] {
            bytes.enumerated().map { index, byte in
                let bits = max(0, min(8, prefix - index * 8))
                return bits == 0 ? 0 : byte & (~UInt8(0) << (8 - bits))
            }
        }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt8 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
        for width in [4, 16] {
            for prefix in 0...(width * 8) {
                for _ in 0..<40 {
                    let base = (0..<width).map { _ in next() }
                    let address = try #require(IPAddress(bytes: base))
                    let block = try #require(CIDR(address: address, prefixLength: prefix))
                    var near = base
                    near[Int(next()) % width] ^= UInt8(1) << (next() % 8)   // one bit flipped
                    for candidate in [base, near, (0..<width).map { _ in next() }] {
                        let ip = try #require(IPAddress(bytes: candidate))
                        let expected = masked(candidate, prefix) == block.network.bytes
                        #expect(block.contains(ip) == expected, "\(ip) in \(block)")
                        if width == 4 {
                            #expect(block.contains(ip.mappedIPv6) == expected, "\(ip.mappedIPv6) in \(block)")
                        }
                    }
                }
            }
        }
    }

    @Test func ipv4BlockMatchesMappedIPv6() throws {
        let net = try #require(CIDR("10.0.0.0/8"))
        #expect(net.contains(IPAddress("::ffff:10.1.2.3")!))
        #expect(!net.contains(IPAddress("::ffff:11.1.2.3")!))
        // Only the mapped form: IPv4-compatible and other IPv6 do not match.
        #expect(!net.contains(IPAddress("::10.1.2.3")!))
    }

    @Test func ipv6BlockDoesNotMatchIPv4() throws {
        #expect(!CIDR("::/0")!.contains(IPAddress("10.1.2.3")!))
        #expect(CIDR("::ffff:0:0/96")!.contains(IPAddress("::ffff:10.1.2.3")!))
    }

    @Test func initFromAddressAndPrefix() {
        #expect(CIDR(address: IPAddress("10.9.8.7")!, prefixLength: 16)?.description == "10.9.0.0/16")
        #expect(CIDR(address: IPAddress("10.9.8.7")!, prefixLength: 33) == nil)
        #expect(CIDR(address: IPAddress("::1")!, prefixLength: -1) == nil)
    }
}
