import NIOCore
import Testing
@testable import ProxyConfig

@Suite struct IPAddressTests {
    @Test(arguments: [
        ("0.0.0.0", [0, 0, 0, 0]),
        ("127.0.0.1", [127, 0, 0, 1]),
        ("255.255.255.255", [255, 255, 255, 255]),
        ("93.184.216.34", [93, 184, 216, 34]),
    ] as [(String, [UInt8])])
    func parsesIPv4(text: String, bytes: [UInt8]) throws {
        let ip = try #require(IPAddress(text))
        #expect(ip.bytes == bytes)
        #expect(ip.isIPv4)
        #expect(ip.description == text)
    }

    @Test(arguments: [
        "", "1.2.3", "1.2.3.4.5", "256.0.0.1", "010.0.0.1", "1.2.3.04", "00.1.2.3",
        "1.2.3.-4", "+1.2.3.4", "0x7f.0.0.1", "1.2..3", " 1.2.3.4", "1.2.3.4 ", "1.2.3.4/8", "1.2.3.1000",
    ])
    func rejectsBadIPv4(text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test(arguments: [
        ("::", "::"),
        ("::1", "::1"),
        ("0:0:0:0:0:0:0:1", "::1"),
        ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"),
        ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
        // A single zero group is not shortened (RFC 5952 4.2.2).
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        // The longest run wins; on a tie the first one.
        ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"),
        ("::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8"),
        ("fe80::", "fe80::"),
        ("2606:4700::1", "2606:4700::1"),
        ("::ffff:1.2.3.4", "::ffff:1.2.3.4"),
        ("::FFFF:102:304", "::ffff:1.2.3.4"),
        ("0:0:0:0:0:ffff:7f00:1", "::ffff:127.0.0.1"),
        ("64:ff9b::192.0.2.33", "64:ff9b::c000:221"),
        ("1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"),
    ])
    func parsesIPv6ToCanonicalText(text: String, canonical: String) throws {
        let ip = try #require(IPAddress(text))
        #expect(!ip.isIPv4)
        #expect(ip.bytes.count == 16)
        #expect(ip.description == canonical)
        // Canonical text must read back as the same address.
        #expect(IPAddress(canonical) == ip)
    }

    @Test(arguments: [
        ":::", "1::2::3", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8::", "::1:2:3:4:5:6:7:8",
        ":1::", "1:", ":1", "12345::", "g::1", "fe80::1%eth0", "::ffff:1.2.3", "::ffff:256.1.2.3",
        "::1.2.3.4:1", "1.2.3.4::", "[::1]", "::ffff:01.2.3.4",
    ])
    func rejectsBadIPv6(text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test func zoneIdHasItsOwnReason() {
        #expect(throws: ConfigurationError.malformedValue(reason: "IPv6 zone ids like %eth0 are not supported")) {
            try IPAddress(parsing: "fe80::1%eth0")
        }
    }

    @Test func unmapsIPv4MappedAddresses() throws {
        let mapped = try #require(IPAddress("::ffff:10.1.2.3"))
        #expect(mapped.unmappedIPv4 == IPAddress("10.1.2.3"))
        #expect(IPAddress("::1")?.unmappedIPv4 == nil)
        // IPv4-compatible (::a.b.c.d) is not IPv4-mapped.
        #expect(IPAddress("::10.1.2.3")?.unmappedIPv4 == nil)
        #expect(IPAddress("10.1.2.3")?.unmappedIPv4 == nil)
        #expect(IPAddress("10.1.2.3")?.mappedIPv6 == mapped)
    }

    @Test func initFromRawBytes() throws {
        #expect(IPAddress(bytes: [1, 2, 3, 4])?.description == "1.2.3.4")
        let v6 = try #require(IPAddress(bytes: [UInt8](repeating: 0, count: 15) + [1]))
        #expect(v6.description == "::1")
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress(bytes: [UInt8](repeating: 0, count: 5)) == nil)
        #expect(IPAddress(bytes: []) == nil)
    }

    @Test func equalityIsByValueNotText() {
        #expect(IPAddress("::1") == IPAddress("0::0:1"))
        #expect(IPAddress("1.2.3.4") != IPAddress("::ffff:1.2.3.4"))
    }

    @Test func initFromSocketAddress() throws {
        // Only builds sockaddr structs; nothing is connected.
        #expect(IPAddress(try SocketAddress(ipAddress: "192.0.2.7", port: 80)) == IPAddress("192.0.2.7"))
        #expect(IPAddress(try SocketAddress(ipAddress: "2001:db8::1", port: 80)) == IPAddress("2001:db8::1"))
        #expect(IPAddress(try SocketAddress(ipAddress: "::ffff:127.0.0.1", port: 80))?.unmappedIPv4 == IPAddress("127.0.0.1"))
    }
}
