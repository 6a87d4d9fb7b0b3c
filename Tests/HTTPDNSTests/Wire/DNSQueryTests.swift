import Testing
@testable import HTTPDNS

/// The DNS listener's query parser and answer builder, byte by byte.
@Suite struct DNSQueryTests {
    /// "Www.Example.com" A, ID 0xBEEF, RD=1.
    private let plain: [UInt8] = [0xBE, 0xEF, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
                                  3, 0x57, 0x77, 0x77, 7, 0x65, 0x78, 0x61, 0x6D, 0x70, 0x6C, 0x65, 3, 0x63, 0x6F, 0x6D, 0,
                                  0x00, 0x01, 0x00, 0x01]

    /// `plain` with ARCOUNT 1 and an OPT record: payload `size`, version `version`, DO set.
    private func withOPT(size: UInt16 = 4096, version: UInt8 = 0) -> [UInt8] {
        var bytes = plain
        bytes[11] = 1
        bytes += [0, 0x00, 0x29, UInt8(size >> 8), UInt8(size & 0xFF), 0, version, 0x80, 0x00, 0, 0]
        return bytes
    }

    private func problem(_ bytes: [UInt8]) -> DNSQuery.Problem? {
        do {
            _ = try DNSQuery.parse(bytes)
            return nil
        } catch {
            return error
        }
    }

    private func rcode(_ bytes: [UInt8]) -> UInt8? {
        if case .reply(let rcode, _, _, _, _, _)? = problem(bytes) { return rcode }
        return nil
    }

    @Test func parsesAPlainQuery() throws {
        let query = try DNSQuery.parse(plain)
        #expect(query.id == 0xBEEF)
        #expect(query.recursionDesired)
        #expect(query.name == "www.example.com")
        #expect(query.type == 1)
        #expect(query.qclass == 1)
        #expect(query.edns == nil)
        #expect(query.udpLimit == 512)
        // The question is echoed as received, case and all.
        #expect(Array(query.question) == Array(plain[12...]))
    }

    @Test func readsEDNS0AndCapsThePayloadSize() throws {
        let query = try DNSQuery.parse(withOPT())
        #expect(query.edns == DNSQuery.EDNS(payloadSize: 4096, version: 0, dnssecOK: true))
        #expect(query.udpLimit == 1232)
        #expect(try DNSQuery.parse(withOPT(size: 1000)).udpLimit == 1000)
        // Below 512 counts as 512 (RFC 6891 section 6.2.5).
        #expect(try DNSQuery.parse(withOPT(size: 100)).udpLimit == 512)
        #expect(rcode(withOPT(version: 1)) == DNSQuery.RCode.badVers)
    }

    @Test func dropsWhatIsNotAQuery() {
        #expect(problem(Array(plain.prefix(11))) == .drop("11 bytes: shorter than a DNS header"))
        var response = plain
        response[2] |= 0x80
        #expect(problem(response) == .drop("a response (QR=1), not a query"))
        #expect(problem([]) != nil)
    }

    @Test func answersFormErrWithTheIDForMalformedQueries() {
        // Cut inside the name, inside the type/class, two questions, an answer record, a pointer.
        #expect(rcode(Array(plain.prefix(20))) == DNSQuery.RCode.formErr)
        #expect(rcode(Array(plain.prefix(plain.count - 1))) == DNSQuery.RCode.formErr)
        var two = plain
        two[5] = 2
        #expect(rcode(two) == DNSQuery.RCode.formErr)
        var answers = plain
        answers[7] = 1
        #expect(rcode(answers) == DNSQuery.RCode.formErr)
        var none = plain
        none[5] = 0
        #expect(rcode(none) == DNSQuery.RCode.formErr)
        let pointer: [UInt8] = Array(plain.prefix(12)) + [0xC0, 0x0C, 0, 1, 0, 1]
        #expect(rcode(pointer) == DNSQuery.RCode.formErr)
        // ARCOUNT says one record, none follows.
        var missingOPT = plain
        missingOPT[11] = 1
        #expect(rcode(missingOPT) == DNSQuery.RCode.formErr)
        if case .reply(_, let id, _, let question, _, _)? = problem(missingOPT) {
            #expect(id == 0xBEEF)
            #expect(question == Array(plain[12...]))
        } else {
            Issue.record("expected a reply")
        }
    }

    @Test func refusesOversizeQueriesAndOtherOpcodes() {
        let oversize = withOPT() + [UInt8](repeating: 0, count: DNSQuery.maximumLength)
        #expect(rcode(oversize) == DNSQuery.RCode.formErr)
        var notify = plain
        notify[2] = 0x20  // opcode 4
        #expect(rcode(notify) == DNSQuery.RCode.notImp)
        var tooManyAdditional = plain
        tooManyAdditional[11] = 200
        #expect(rcode(tooManyAdditional) == DNSQuery.RCode.formErr)
    }

    @Test func nameWithBytesNoHostHasHasNoText() throws {
        var odd = plain
        odd[13] = 0x2E  // a dot inside the first label
        #expect(try DNSQuery.parse(odd).name == nil)
        let root: [UInt8] = Array(plain.prefix(12)) + [0, 0, 2, 0, 1]
        #expect(try DNSQuery.parse(root).name == "")
        // 64-byte label: not a label length (0x40 is an extended label type).
        let long: [UInt8] = Array(plain.prefix(12)) + [64] + [UInt8](repeating: 0x61, count: 64) + [0, 0, 1, 0, 1]
        #expect(rcode(long) == DNSQuery.RCode.formErr)
        // Labels adding up past 255 bytes.
        var huge = Array(plain.prefix(12))
        for _ in 0..<5 { huge += [63] + [UInt8](repeating: 0x61, count: 63) }
        huge += [0, 0, 1, 0, 1]
        #expect(rcode(huge) == DNSQuery.RCode.formErr)
    }

    @Test func buildsAnAnswerWithPointersAndTTL() throws {
        let query = try DNSQuery.parse(plain)
        let answer = DNSAnswerBuilder.answer(
            to: query, rcode: 0, records: [.init(type: 1, ttl: 300, rdata: [192, 0, 2, 1])])
        let expected: [UInt8] = [0xBE, 0xEF, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0] + Array(plain[12...])
            + [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0x01, 0x2C, 0, 4, 192, 0, 2, 1]
        #expect(answer == expected)
        // The existing answer parser reads it back.
        let parsed = try DNSMessage.parse(answer, name: "www.example.com", type: .a, expectedID: 0xBEEF)
        #expect(parsed.ipv4 == ["192.0.2.1"])
        #expect(parsed.ttl == 300)
    }

    @Test func negativeAnswersCarryAnSOAWithTheTTL() throws {
        let query = try DNSQuery.parse(withOPT())
        let answer = DNSAnswerBuilder.answer(to: query, rcode: 3, negativeTTL: 60)
        #expect(answer[3] & 0x0F == 3)
        #expect(Array(answer[6..<12]) == [0, 0, 0, 1, 0, 1])  // no answer, one SOA, one OPT
        let parsed = try DNSMessage.parse(answer, name: "www.example.com", type: .a, expectedID: nil)
        #expect(parsed.outcome == .nxdomain)
        #expect(parsed.ttl == 60)
        #expect(Array(answer.suffix(11)) == [0, 0, 0x29, 0x04, 0xD0, 0, 0, 0, 0, 0, 0])
    }

    @Test func setsTCWhenTheAnswerDoesNotFit() throws {
        let query = try DNSQuery.parse(plain)
        let records = (0..<40).map { DNSAnswerBuilder.Record(type: 1, ttl: 60, rdata: [10, 0, 0, UInt8($0)]) }
        let full = DNSAnswerBuilder.answer(to: query, rcode: 0, records: records, limit: 65535)
        #expect(full.count > 512)
        #expect(full[2] & 0x02 == 0)
        let truncated = DNSAnswerBuilder.answer(to: query, rcode: 0, records: records, limit: query.udpLimit)
        #expect(truncated[2] & 0x02 != 0)
        #expect(truncated.count == 12 + query.question.count)
        #expect(Array(truncated[6..<8]) == [0, 0])
    }

    @Test func problemAnswersEchoWhatWasRead() {
        let formErr = DNSAnswerBuilder.problem(rcode: 1, id: 7, queryFlags: 0x0100, question: nil, edns: nil)
        #expect(formErr == [0, 7, 0x81, 0x81, 0, 0, 0, 0, 0, 0, 0, 0])
        let badVers = DNSAnswerBuilder.problem(rcode: 16, id: 7, queryFlags: 0, question: [0, 0, 1, 0, 1], edns: nil)
        #expect(badVers[3] & 0x0F == 0)
        #expect(Array(badVers.suffix(11)) == [0, 0, 0x29, 0x04, 0xD0, 1, 0, 0, 0, 0, 0])
    }

    @Test func relayRestoresTheClientIDOrTruncates() throws {
        let query = try DNSQuery.parse(plain)
        var upstream = DNSAnswerBuilder.answer(to: query, rcode: 3)
        upstream[0] = 0x12
        upstream[1] = 0x34
        let relayed = DNSAnswerBuilder.relay(upstream, to: query, limit: 512)
        #expect(Array(relayed[0..<2]) == [0xBE, 0xEF])
        #expect(Array(relayed[2...]) == Array(upstream[2...]))
        let big = upstream + [UInt8](repeating: 0, count: 600)
        let truncated = DNSAnswerBuilder.relay(big, to: query, limit: 512)
        #expect(truncated[2] & 0x02 != 0)
        #expect(truncated[3] & 0x0F == 3)
        #expect(truncated.count <= 512)
        #expect(DNSAnswerBuilder.relay([1, 2], to: query, limit: 512)[3] & 0x0F == 2)
    }

    @Test func randomBytesNeverTrap() {
        var random = SplitMix64(seed: 25)
        for round in 0..<20_000 {
            let count = Int(random.next() % 64) + (round % 2 == 0 ? 12 : 0)
            var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if bytes.count > 2, round % 3 == 0 { bytes[2] &= 0x07 }  // mostly queries with opcode 0
            if let query = try? DNSQuery.parse(bytes) {
                #expect(query.question.count >= 5)
                _ = DNSAnswerBuilder.answer(to: query, rcode: 0, records: [.init(type: 1, ttl: 1, rdata: [1, 2, 3, 4])], limit: query.udpLimit)
            }
        }
    }

    /// The name is written straight into its string: lowercased, dots between labels, long names
    /// (past the small-string size) too; an additional record with a real owner name is stepped
    /// over and an OPT after it still read; an OPT owned by anything but the root is FORMERR.
    @Test func namesAndAdditionalRecordsParsedInPlace() throws {
        let labels = ["Sub", "Domain-With-Length", "EXAMPLE", "test"]
        var bytes = Array(plain.prefix(12))
        for label in labels { bytes += [UInt8(label.utf8.count)] + Array(label.utf8) }
        bytes += [0, 0, 28, 0, 1]
        let query = try DNSQuery.parse(bytes)
        #expect(query.name == "sub.domain-with-length.example.test" && query.type == 28)

        var withExtra = plain
        withExtra[11] = 2
        // A TXT record owned by "a.b" (uncompressed), then the OPT.
        withExtra += [1, 0x61, 1, 0x62, 0, 0x00, 0x10, 0x00, 0x01, 0, 0, 0, 0, 0, 2, 1, 0x78]
        withExtra += [0, 0x00, 0x29, 0x04, 0xD0, 0, 0, 0x00, 0x00, 0, 0]
        let extra = try DNSQuery.parse(withExtra)
        #expect(extra.edns?.payloadSize == 1232 && extra.name == "www.example.com")

        var notRoot = plain
        notRoot[11] = 1
        notRoot += [1, 0x61, 0, 0x00, 0x29, 0x04, 0xD0, 0, 0, 0x00, 0x00, 0, 0]
        #expect(rcode(notRoot) == DNSQuery.RCode.formErr)
    }

    /// The listener's address answers are built in one buffer; byte for byte what the general
    /// builder makes from records, for every family, bad text, EDNS or not, and limits that truncate.
    @Test func addressAnswersEqualTheRecordBuilders() throws {
        let lists: [[String]] = [
            [], ["192.0.2.1"], ["192.0.2.1", "198.51.100.255", "0.0.0.0"], ["2001:db8::1", "::1"], ["192.0.2.1", "2001:db8::1"],
            ["01.2.3.4", "256.1.1.1", "1.2.3", "1.2.3.4.5", "", "1..2.3", " 1.2.3.4", "255.255.255.255", "::ffff:1.2.3.4", "x"],
            Array(repeating: "203.0.113.9", count: 60), Array(repeating: "2001:db8::7", count: 40),
        ]
        for bytes in [plain, withOPT(size: 1232)] {
            let query = try DNSQuery.parse(bytes)
            for type: UInt16 in [1, 28] {
                for ips in lists {
                    for limit in [512, 1232, 65535, 40] {
                        let length = type == 1 ? 4 : 16
                        let records = ips.compactMap { ip -> DNSAnswerBuilder.Record? in
                            guard let data = DNSAnswerBuilder.addressData(ip), data.count == length else { return nil }
                            return DNSAnswerBuilder.Record(type: type, ttl: 300, rdata: data)
                        }
                        let expected = DNSAnswerBuilder.answer(to: query, rcode: 0, records: records, limit: limit)
                        let built = DNSAnswerBuilder.addressAnswer(to: query, type: type, ttl: 300, ips: ips, limit: limit)
                        #expect(built == expected, "type \(type), \(ips.prefix(3)), limit \(limit), EDNS \(query.edns != nil)")
                    }
                }
            }
        }
    }

    /// The hand-read dotted quad takes exactly what inet_pton takes (`IPAddress`), random text included.
    @Test func dottedQuadsAgreeWithInetPton() {
        var random = SplitMix64(seed: 37)
        let alphabet = Array("0123456789.:a ".utf8)
        var samples = ["1.2.3.4", "0.0.0.0", "255.255.255.255", "00.1.2.3", "1.2.3.04", "1.2.3.256", "1.2.3.", ".1.2.3", "1.2.3.4.", "1234.1.1.1"]
        for _ in 0..<20_000 {
            let count = Int(random.next() % 16)
            samples.append(String(decoding: (0..<count).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }, as: UTF8.self))
        }
        for text in samples {
            var out: [UInt8] = []
            let appended = DNSAnswerBuilder.appendAddress(text, length: 4, to: &out)
            let expected = DNSAnswerBuilder.addressData(text).flatMap { $0.count == 4 ? $0 : nil }
            #expect(appended == (expected != nil) && out == (expected ?? []), "\(text.debugDescription)")
        }
    }
}
