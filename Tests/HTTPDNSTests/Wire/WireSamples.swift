/// Hand-built DNS answers shared by the wire parser and robustness tests.
enum WireSamples {
    /// www.example.com → CNAME cdn.example.com (ttl 300) → A 93.184.216.34 (ttl 60) and
    /// A 93.184.216.35 (ttl 120), every name after the question compressed.
    static func cnameAnswer(id: UInt16 = 0x1234) -> [UInt8] {
        var m = DNSTestMessage(id: id, answers: 3)
        m.question("www.example.com")                     // name at 12; "example.com" at 16
        m.pointer(12); m.recordHeader(type: 5, ttl: 300, rdLength: 6)
        let cdn = m.offset
        m.labels("cdn", terminated: false); m.pointer(16)   // cdn.example.com
        m.pointer(cdn); m.recordHeader(type: 1, ttl: 60, rdLength: 4); m.raw([93, 184, 216, 34])
        m.pointer(cdn); m.recordHeader(type: 1, ttl: 120, rdLength: 4); m.raw([93, 184, 216, 35])
        return m.bytes
    }

    /// An AAAA answer for v6.example.com (two addresses, one repeated).
    static func aaaaAnswer() -> [UInt8] {
        var m = DNSTestMessage(answers: 3)
        m.question("v6.example.com", type: 28)
        let v6a: [UInt8] = [0x24, 0x00, 0x32, 0x00] + [UInt8](repeating: 0, count: 11) + [1]
        let v6b: [UInt8] = [0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x10]
        for data in [v6a, v6b, v6a] {
            m.pointer(12); m.recordHeader(type: 28, ttl: 45, rdLength: 16); m.raw(data)
        }
        return m.bytes
    }

    /// NXDOMAIN for nope.example.com with an SOA (record TTL 900, MINIMUM 300) in authority.
    static func nxdomainAnswer(rcode: UInt16 = 3, soaTTL: UInt32 = 900, minimum: UInt32 = 300) -> [UInt8] {
        var m = DNSTestMessage(flags: 0x8180 | rcode, answers: 0, authority: 1)
        m.question("nope.example.com")                    // "example.com" at 17
        m.pointer(17)
        let rdLengthAt = m.offset + 8
        m.recordHeader(type: 6, ttl: soaTTL, rdLength: 0)
        let start = m.offset
        m.labels("ns1", terminated: false); m.pointer(17)
        m.labels("hostmaster", terminated: false); m.pointer(17)
        m.u32(2024010101); m.u32(7200); m.u32(3600); m.u32(1209600); m.u32(minimum)
        m.patchU16(at: rdLengthAt, UInt16(m.offset - start))
        return m.bytes
    }
}
