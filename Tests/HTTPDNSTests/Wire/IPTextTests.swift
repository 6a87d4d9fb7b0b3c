import Testing
@testable import HTTPDNS

@Suite struct IPTextTests {
    @Test(arguments: [
        ("1.2.3.4", "1.2.3.4", IPText.Family.v4),
        ("255.255.255.255", "255.255.255.255", .v4),
        ("2400:3200:0:0:0:0:0:1", "2400:3200::1", .v6),
        ("2001:DB8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1", .v6),
        ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1", .v6),
        ("::", "::", .v6),
        ("::FFFF:1.2.3.4", "::ffff:1.2.3.4", .v6),
        ("::ffff:102:304", "::ffff:1.2.3.4", .v6),
        ("64:ff9b::192.0.2.33", "64:ff9b::c000:221", .v6),
    ])
    func canonicalises(text: String, canonical: String, family: IPText.Family) throws {
        let result = try #require(IPText.canonical(text))
        #expect(result.text == canonical)
        #expect(result.family == family)
    }

    @Test(arguments: ["", "1.2.3", "256.1.1.1", "01.2.3.4", " 1.2.3.4", "1.2.3.4 ", "1.2.3.4\u{0}", "1.2.3.4\u{0}junk",
                      "fe80::1%eth0", "1::2::3", "::g", "x.cdn.net.", String(repeating: "1", count: 100), "１.２.３.４"])
    func rejects(text: String) {
        #expect(IPText.canonical(text) == nil)
    }

    @Test func formatsWireBytes() {
        #expect(IPText.format(v4: [93, 184, 216, 34]) == "93.184.216.34")
        #expect(IPText.format(v6: [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1]) == "2001:db8::1")
        // Short input is padded rather than trapped on (callers never pass it).
        #expect(IPText.format(v6: [0x20, 0x01]) == "2001::")
    }
}
