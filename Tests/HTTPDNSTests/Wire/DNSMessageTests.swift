import Testing
@testable import HTTPDNS

@Suite struct DNSMessageTests {
    private func label(_ bytes: [UInt8], name: String = "www.example.com", type: DNSRecordType = .a, id: UInt16? = nil) -> String? {
        do {
            _ = try DNSMessage.parse(bytes, name: name, type: type, expectedID: id)
            return nil
        } catch {
            return error.shortDescription
        }
    }

    // MARK: Queries

    @Test func buildsTheRFC8484ExampleQuery() throws {
        let query = try DNSMessage.makeQuery(name: "www.Example.COM.", type: .a)
        #expect(query == [0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                          3, 0x77, 0x77, 0x77, 7, 0x65, 0x78, 0x61, 0x6D, 0x70, 0x6C, 0x65, 3, 0x63, 0x6F, 0x6D, 0,
                          0x00, 0x01, 0x00, 0x01])
        // RFC 8484 section 4.1.1 prints exactly this GET parameter.
        #expect(DNSMessage.base64URL(query) == "AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB")
        #expect(DNSMessage.getPath(endpoint: "https://dns.example/dns-query", query: query)
            == "https://dns.example/dns-query?dns=AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB")
        #expect(DNSMessage.getPath(endpoint: "https://x/q?ct", query: [0xFB, 0xFF]) == "https://x/q?ct&dns=-_8")
    }

    @Test func queryCarriesIdAndType() throws {
        let query = try DNSMessage.makeQuery(name: "a.b", type: .aaaa, id: 0xBEEF)
        #expect(query == [0xBE, 0xEF, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0x61, 1, 0x62, 0, 0x00, 0x1C, 0x00, 0x01])
    }

    @Test func base64URLWithoutPadding() {
        #expect(DNSMessage.base64URL([]) == "")
        #expect(DNSMessage.base64URL(Array("f".utf8)) == "Zg")
        #expect(DNSMessage.base64URL(Array("fo".utf8)) == "Zm8")
        #expect(DNSMessage.base64URL(Array("foo".utf8)) == "Zm9v")
        #expect(DNSMessage.base64URL([0xFB, 0xFF, 0xBF]) == "-_-_")
    }

    @Test func nameLimits() throws {
        let label63 = String(repeating: "a", count: 63)
        _ = try DNSMessage.makeQuery(name: label63 + ".com", type: .a)
        // 4 x 63 + 3 dots = 255 > 253; 3 x 63 + 61 + 3 dots = 253 is the longest allowed.
        let longest = [label63, label63, label63, String(repeating: "b", count: 61)].joined(separator: ".")
        #expect(try DNSMessage.makeQuery(name: longest, type: .a).count == 12 + 255 + 4)
        for bad in ["", ".", "a..b", ".a", label63 + "a.com", longest + "b", "sp ace.com", "tab\t.com", "bücher.de", "nul\u{0}.com"] {
            #expect(throws: WireError.self, "\(bad)") { try DNSMessage.makeQuery(name: bad, type: .a) }
        }
    }

    // MARK: Answers

    @Test func followsACompressedCNAMEChain() throws {
        let answer = try DNSMessage.parse(WireSamples.cnameAnswer(), name: "WWW.example.com.", type: .a, expectedID: 0x1234)
        #expect(answer == WireAnswer(outcome: .addresses, ipv4: ["93.184.216.34", "93.184.216.35"], ttl: 60))
    }

    @Test func parsesAAAAToCanonicalText() throws {
        let answer = try DNSMessage.parse(WireSamples.aaaaAnswer(), name: "v6.example.com", type: .aaaa, expectedID: nil)
        #expect(answer == WireAnswer(outcome: .addresses, ipv6: ["2400:3200::1", "2001:db8:0:1::10"], ttl: 45))
    }

    @Test func otherTypeIsNoData() throws {
        let answer = try DNSMessage.parse(WireSamples.cnameAnswer(), name: "www.example.com", type: .aaaa, expectedID: nil)
        #expect(answer == WireAnswer(outcome: .noData))
    }

    @Test func nxdomainWithSOANegativeTTL() throws {
        #expect(try DNSMessage.parse(WireSamples.nxdomainAnswer(), name: "nope.example.com", type: .a, expectedID: nil)
            == WireAnswer(outcome: .nxdomain, ttl: 300))
        #expect(try DNSMessage.parse(WireSamples.nxdomainAnswer(soaTTL: 20), name: "nope.example.com", type: .a, expectedID: nil)
            == WireAnswer(outcome: .nxdomain, ttl: 20))
        // The same authority on a NOERROR answer without records is noData with that TTL.
        #expect(try DNSMessage.parse(WireSamples.nxdomainAnswer(rcode: 0), name: "nope.example.com", type: .a, expectedID: nil)
            == WireAnswer(outcome: .noData, ttl: 300))
    }

    @Test func headerChecks() {
        var query = (try? DNSMessage.makeQuery(name: "www.example.com", type: .a)) ?? []
        #expect(label(query) == "not_a_response")
        query[2] |= 0x80
        #expect(label(query) == nil)  // QR set and no answers: a valid, empty (noData) answer
        #expect(label(WireSamples.cnameAnswer(id: 7), id: 8) == "id_mismatch")
        #expect(label(WireSamples.cnameAnswer(id: 7), id: 7) == nil)
        var truncated = WireSamples.cnameAnswer()
        truncated[2] |= 0x02
        #expect(label(truncated) == "truncated")
        for (rcode, expected) in [(1, "formerr"), (2, "servfail"), (4, "notimp"), (5, "refused"), (15, "rcode_other")] {
            var message = WireSamples.cnameAnswer()
            message[3] = (message[3] & 0xF0) | UInt8(rcode)
            #expect(label(message) == expected)
        }
    }

    @Test func wrongAddressLengthIsAnError() {
        var m = DNSTestMessage(answers: 1)
        m.question("www.example.com")
        m.pointer(12); m.recordHeader(type: 1, ttl: 60, rdLength: 5); m.raw([1, 2, 3, 4, 5])
        #expect(label(m.bytes) == "malformed_message")
    }

    @Test func otherClassesAndTypesAreSkipped() throws {
        var m = DNSTestMessage(answers: 3)
        m.question("www.example.com")
        m.pointer(12); m.recordHeader(type: 1, ttl: 60, rdLength: 5, rrClass: 3); m.raw([1, 2, 3, 4, 5])  // CHAOS
        m.pointer(12); m.recordHeader(type: 16, ttl: 60, rdLength: 3); m.raw([2, 0x68, 0x69])            // TXT
        m.pointer(12); m.recordHeader(type: 1, ttl: 0x8000_0000, rdLength: 4); m.raw([10, 0, 0, 1])     // RFC 2181 TTL
        #expect(try DNSMessage.parse(m.bytes, name: "www.example.com", type: .a, expectedID: nil)
            == WireAnswer(outcome: .addresses, ipv4: ["10.0.0.1"], ttl: 0))
    }

    @Test func cnameLoopIsAnError() {
        var m = DNSTestMessage(answers: 2)
        m.question("a.example")                            // "example" at 14
        m.pointer(12); m.recordHeader(type: 5, ttl: 60, rdLength: 4)
        let b = m.offset
        m.raw([1, 0x62]); m.pointer(14)                    // b.example
        m.pointer(b); m.recordHeader(type: 5, ttl: 60, rdLength: 2); m.pointer(12)
        #expect(label(m.bytes, name: "a.example") == "cname_chain")
    }

    @Test func pointerLoopsAndForwardPointersAreRejected() {
        // The question name is a pointer to itself.
        var selfPointer = DNSTestMessage(answers: 0)
        selfPointer.pointer(12); selfPointer.u16(1); selfPointer.u16(1)
        #expect(label(selfPointer.bytes) == "malformed_message")

        // A label, then a pointer back to the start of the same name.
        var intoItself = DNSTestMessage(answers: 0)
        intoItself.labels("a", terminated: false); intoItself.pointer(12); intoItself.u16(1); intoItself.u16(1)
        #expect(label(intoItself.bytes) == "malformed_message")
        // Rejected at once by the backward-only rule, not after 64 laps by the jump cap.
        for loop in [selfPointer.bytes, intoItself.bytes] {
            do {
                _ = try DNSWireReader.name(in: loop, at: 12, "a name")
                Issue.record("pointer loop accepted")
            } catch {
                #expect(error.description.contains("does not point backwards"), "\(error)")
            }
        }

        // Two names pointing at each other: the answer owner jumps back to the question,
        // whose name was rewritten to jump forward to the answer.
        var mutual = DNSTestMessage(answers: 1)
        mutual.pointer(18); mutual.u16(1); mutual.u16(1)  // question name at 12 -> 18 (forward)
        mutual.pointer(12); mutual.recordHeader(type: 1, ttl: 1, rdLength: 4); mutual.raw([1, 2, 3, 4])
        #expect(label(mutual.bytes) == "malformed_message")

        // A forward pointer to a perfectly valid name later in the message.
        var forward = DNSTestMessage(answers: 1)
        forward.pointer(18); forward.u16(1); forward.u16(1)
        forward.labels("www.example.com"); forward.recordHeader(type: 1, ttl: 1, rdLength: 4); forward.raw([1, 2, 3, 4])
        #expect(label(forward.bytes) == "malformed_message")

        // Reserved label types 0x40 and 0x80.
        for marker: UInt8 in [0x40, 0x80] {
            var reserved = DNSTestMessage(answers: 0)
            reserved.raw([marker | 1, 0x61, 0]); reserved.u16(1); reserved.u16(1)
            #expect(label(reserved.bytes) == "malformed_message")
        }
    }

    @Test func pointerJumpsAreCapped() throws {
        // Root label at 0, then names "x" + pointer to the previous one: the name at
        // starts[k] needs k + 1 jumps and is only 2k + 3 bytes long, so only the jump cap bites.
        var buffer: [UInt8] = [0]
        var starts: [Int] = []
        var previous = 0
        for _ in 0..<70 {
            starts.append(buffer.count)
            buffer += [1, 0x78, 0xC0 | UInt8(previous >> 8), UInt8(previous & 0xFF)]
            previous = starts[starts.count - 1]
        }
        #expect(try DNSWireReader.name(in: buffer, at: starts[63], "a name").name.count == 64 * 2 + 1)
        #expect(throws: WireError.self) { try DNSWireReader.name(in: buffer, at: starts[64], "a name") }

        // The same inside a message: the chain hides in a TXT record, a CNAME target points at its end.
        var m = DNSTestMessage(answers: 2)
        m.question("www.example.com")
        m.pointer(12)
        let rdLengthAt = m.offset + 8
        m.recordHeader(type: 16, ttl: 1, rdLength: 0)
        let blob = m.offset
        var last = 12
        for _ in 0..<70 {
            let here = m.offset
            m.raw([1, 0x78]); m.pointer(last)
            last = here
        }
        m.patchU16(at: rdLengthAt, UInt16(m.offset - blob))
        m.pointer(12); m.recordHeader(type: 5, ttl: 1, rdLength: 2); m.pointer(last)
        #expect(label(m.bytes) == "malformed_message")
    }

    @Test func namesLongerThan255AreRejected() {
        // Five 63-byte labels in the question: 321 bytes on the wire.
        var direct = DNSTestMessage(answers: 0)
        for _ in 0..<5 { direct.raw([63] + [UInt8](repeating: 0x61, count: 63)) }
        direct.raw([0]); direct.u16(1); direct.u16(1)
        #expect(label(direct.bytes) == "malformed_message")

        // Each piece short, the whole too long through pointers.
        var viaPointers = DNSTestMessage(answers: 0)
        viaPointers.question("x")                          // root of the chain at 12
        var previous = 12
        for _ in 0..<5 {
            let start = viaPointers.offset
            viaPointers.raw([60] + [UInt8](repeating: 0x62, count: 60)); viaPointers.pointer(previous)
            previous = start
        }
        #expect(throws: WireError.self) { try DNSWireReader.name(in: viaPointers.bytes, at: previous, "a name") }

        // Exactly 255 is fine.
        var longest = DNSTestMessage(answers: 0)
        for length in [63, 63, 63, 61] { longest.raw([UInt8(length)] + [UInt8](repeating: 0x63, count: length)) }
        longest.raw([0]); longest.u16(1); longest.u16(1)
        #expect(label(longest.bytes) == nil)
    }

    @Test func everyTruncationOfAValidAnswerThrows() {
        for sample in [WireSamples.cnameAnswer(), WireSamples.aaaaAnswer(), WireSamples.nxdomainAnswer()] {
            for length in 0..<sample.count {
                let prefix = Array(sample.prefix(length))
                for type in DNSRecordType.allCases {
                    #expect(throws: WireError.self, "length \(length)") {
                        try DNSMessage.parse(prefix, name: "www.example.com", type: type, expectedID: nil)
                    }
                }
            }
        }
    }

    @Test func cnameTargetMustStayInsideItsRecord() {
        var m = DNSTestMessage(answers: 1)
        m.question("www.example.com")
        // RDLENGTH 2 but the target is "cdn" + pointer (6 bytes).
        m.pointer(12); m.recordHeader(type: 5, ttl: 1, rdLength: 2); m.raw([3, 0x63, 0x64]); m.pointer(16)
        #expect(label(m.bytes) == "malformed_message")
    }
}
