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
