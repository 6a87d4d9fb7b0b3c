import Testing
@testable import HTTPDNS

@Suite struct TencentHTTPDNSTests {
    static func parse(_ text: String) throws -> [TencentHTTPDNS.Line] {
        try TencentHTTPDNS.parse(Array(text.utf8))
    }

    static func single(_ text: String) throws -> WireAnswer {
        try TencentHTTPDNS.parseSingle(Array(text.utf8))
    }

    // MARK: answers

    @Test func addressesWithTTL() throws {
        let answer = try Self.single("2.3.3.4;2.3.3.5;2.3.3.6,120")
        #expect(answer == WireAnswer(outcome: .addresses, ipv4: ["2.3.3.4", "2.3.3.5", "2.3.3.6"], ttl: 120))
    }

    @Test func addressesWithoutTTLOrWithClientIP() throws {
        #expect(try Self.single("2.3.3.4;2.3.3.5") == WireAnswer(outcome: .addresses, ipv4: ["2.3.3.4", "2.3.3.5"]))
        #expect(try Self.single("12.3.3.4;2.3.3.5,120|1.2.3.4")
            == WireAnswer(outcome: .addresses, ipv4: ["12.3.3.4", "2.3.3.5"], ttl: 120, clientIP: "1.2.3.4"))
    }

    @Test func aaaaAnswerAndCanonicalText() throws {
        let answer = try Self.single("2402:4e00:0123:4567:0::2345;2403:4e00:0123:4567:0::2346,300")
        #expect(answer.ipv6 == ["2402:4e00:123:4567::2345", "2403:4e00:123:4567::2346"])
        #expect(answer.ipv4.isEmpty)
        #expect(answer.ttl == 300)
    }

    @Test func addrsBothFamiliesTheShorterTTLWins() throws {
        let answer = try Self.single("2.3.3.4;2.3.3.5,120-2402:4e00::2345;2403:4e00::2346,60|1.2.3.4")
        #expect(answer.ipv4 == ["2.3.3.4", "2.3.3.5"])
        #expect(answer.ipv6 == ["2402:4e00::2345", "2403:4e00::2346"])
        #expect(answer.ttl == 60)
        #expect(answer.clientIP == "1.2.3.4")
    }

    @Test func addrsWithOneFamilyMissing() throws {
        let v4Only = try Self.single("cloud.tencent.com.:2.3.4.5;3.3.3.3-0|1.2.3.4")
        #expect(v4Only.outcome == .addresses)
        #expect(v4Only.ipv4 == ["2.3.4.5", "3.3.3.3"])
        #expect(v4Only.ipv6.isEmpty)
        let v6Only = try Self.single("0-2402:4e00::1,30")
        #expect(v6Only.ipv6 == ["2402:4e00::1"])
        #expect(v6Only.ttl == 30)
    }

    @Test(arguments: ["", "\n", "  \r\n", "0", "0,120", ",120", "0-0", "0-0|1.2.3.4", "cloud.tencent.com.:0-0|1.2.3.4", "cloud.tencent.com|1.2.3.4", ",-,"])
    func emptyAnswersAreNoData(text: String) throws {
        let answer = try Self.single(text)
        #expect(answer.outcome == .noData, "\(text)")
        #expect(answer.ipv4.isEmpty && answer.ipv6.isEmpty)
    }

    @Test func aTTLOfZeroOrLessMeansNone() throws {
        #expect(try Self.single("1.2.3.4,0").ttl == nil)
        #expect(try Self.single("1.2.3.4,").ttl == nil)
        #expect(try Self.single("1.2.3.4,0").resolved().get().ttl == .seconds(60))
    }

    @Test func hostPrefixOnASingleAnswerIsAccepted() throws {
        let lines = try Self.parse("cloud.tencent.com.:2.3.3.4;2.3.3.5,120|1.2.3.4")
        #expect(lines.count == 1)
        #expect(lines[0].host == "cloud.tencent.com")
        #expect(lines[0].answer.ipv4 == ["2.3.3.4", "2.3.3.5"])
        // No trailing dot, and an IPv6 answer after the prefix.
        let v6 = try Self.parse("a.example:2402:4e00::1,60")
        #expect(v6[0].host == "a.example")
        #expect(v6[0].answer.ipv6 == ["2402:4e00::1"])
    }

    @Test func batchOneLinePerHostClientIPFromTheLastLine() throws {
        let text = "cloud.tencent.com.:0\nwww.qq.com.:3.3.3.4;3.3.3.5,180\r\nWWW.DNSPod.cn.:4.3.3.4;4.3.3.6,60|1.2.3.4\n"
        let answers = try TencentHTTPDNS.parseBatch(Array(text.utf8), hosts: ["cloud.tencent.com", "www.qq.com", "www.dnspod.cn"])
        #expect(answers["cloud.tencent.com"]?.outcome == .noData)
        #expect(answers["www.qq.com"] == WireAnswer(outcome: .addresses, ipv4: ["3.3.3.4", "3.3.3.5"], ttl: 180, clientIP: "1.2.3.4"))
        #expect(answers["www.dnspod.cn"]?.ipv4 == ["4.3.3.4", "4.3.3.6"])
        #expect(answers["www.dnspod.cn"]?.ttl == 60)
    }

    @Test func batchWithBothFamiliesAndDashesInNames() throws {
        let text = "my-host.example.:1.1.1.1,30-2001:db8::1,40\nother.example.:0-2001:db8::2,50"
        let answers = try TencentHTTPDNS.parseBatch(Array(text.utf8), hosts: ["my-host.example", "other.example"])
        #expect(answers["my-host.example"] == WireAnswer(outcome: .addresses, ipv4: ["1.1.1.1"], ipv6: ["2001:db8::1"], ttl: 30))
        #expect(answers["other.example"] == WireAnswer(outcome: .addresses, ipv6: ["2001:db8::2"], ttl: 50))
    }

    @Test func batchLinesWithoutAHostCountOnlyForASingleName() throws {
        #expect(try TencentHTTPDNS.parseBatch(Array("1.2.3.4,60".utf8), hosts: ["A.example."])["a.example"]?.ipv4 == ["1.2.3.4"])
        #expect(try TencentHTTPDNS.parseBatch(Array("1.2.3.4,60".utf8), hosts: ["a.example", "b.example"]).isEmpty)
    }

    @Test func invalidEntriesAmongValidOnesAreSkipped() throws {
        let answer = try Self.single(" 1.2.3.4 ;999.1.1.1; ;1.2.3.4;::1 ,60")
        #expect(answer.ipv4 == ["1.2.3.4"])
        #expect(answer.ipv6 == ["::1"])
    }

    // MARK: malformed

    @Test(arguments: [
        "<html><body>502 Bad Gateway</body></html>",
        "not an answer",
        "1.2.3.4,sixty",
        "1.2.3.4,60,70",
        "1.2.3.4-::1-5.6.7.8",
        "1.2.3.4,99999999999999999999",
        "999.999.999.999,60",
        "{\"ips\":[\"1.2.3.4\"]}",
        "a.example.:garbage,60",
    ])
    func malformedAnswersThrow(text: String) {
        #expect(throws: WireError.self, "\(text)") { try Self.single(text) }
    }

    @Test func hugeOrNULOrTooManyLinesThrow() {
        let huge = [UInt8](repeating: UInt8(ascii: "1"), count: TencentHTTPDNS.maximumAnswerBytes + 1)
        #expect(throws: WireError.self) { try TencentHTTPDNS.parse(huge) }
        #expect(throws: WireError.self) { try TencentHTTPDNS.parse(Array("1.2.3.4".utf8) + [0] + Array(",60".utf8)) }
        let lines = (0...TencentHTTPDNS.maximumLines).map { "h\($0).example.:1.2.3.4,60" }.joined(separator: "\n")
        #expect(throws: WireError.self) { try Self.parse(lines) }
    }

    @Test func oddSeparatorsNeverCrash() {
        let pieces = ["1.2.3.4", "::1", ";", ",", "-", "|", ":", ".", "\n", "\r", " ", "0", "60", "a.example.", "ffff", "::ffff:1.2.3.4", "\u{0}", "é", ""]
        var rng = SplitMix64(seed: 0x7E4C_E471)
        var parsed = 0
        for _ in 0..<20_000 {
            var text = ""
            for _ in 0..<Int(rng.next() % 12) { text += pieces[Int(rng.next() % UInt64(pieces.count))] }
            guard let lines = try? Self.parse(text) else { continue }
            parsed += 1
            for line in lines {
                let answer = line.answer
                #expect((answer.outcome == .addresses) == !(answer.ipv4.isEmpty && answer.ipv6.isEmpty), "\(text)")
                #expect(answer.ipv4.allSatisfy { !$0.contains(":") } && answer.ipv6.allSatisfy { $0.contains(":") }, "\(text)")
                #expect((answer.ttl ?? 1) > 0)
            }
        }
        #expect(parsed > 0)
    }

    @Test func randomBytesNeverCrash() {
        var rng = SplitMix64(seed: 0x7E4C_E472)
        for _ in 0..<5_000 {
            let bytes = rng.bytes(Int(rng.next() % 300))
            _ = try? TencentHTTPDNS.parse(bytes)
            _ = try? TencentHTTPDNS.parseBatch(bytes, hosts: ["a.example", "b.example"])
        }
    }

    // MARK: requests

    @Test func httpsRequestCarriesIDTokenAndFamilies() throws {
        let url = try TencentHTTPDNS.url(
            endpoint: "https://119.29.29.99/d", hosts: ["cloud.tencent.com"], id: "1234",
            authentication: .token("t0k+n/=x"), families: .ipv4, ecsIP: nil)
        #expect(url == "https://119.29.29.99/d?dn=cloud.tencent.com&id=1234&token=t0k%2Bn/%3Dx&ttl=1")
        let both = try TencentHTTPDNS.url(
            endpoint: "https://119.29.29.99/d", hosts: ["a.com", "b.com"], id: "1234",
            authentication: .token("tok"), families: .both, ecsIP: "1.2.3.4")
        #expect(both == "https://119.29.29.99/d?dn=a.com,b.com&id=1234&token=tok&ip=1.2.3.4&ttl=1&type=addrs&clientip=1")
        let v6 = try TencentHTTPDNS.url(
            endpoint: "https://119.29.29.99/d", hosts: ["a.com"], id: "1", authentication: .token("t"), families: .ipv6, ecsIP: nil)
        #expect(v6.hasSuffix("&ttl=1&type=aaaa"))
    }

    @Test func httpRequestEncryptsNameAndECSAddress() throws {
        let cipher = try TencentCipher(algorithm: .aes, key: "abc123", randomIV: { TencentCipherTests.iv })
        let url = try TencentHTTPDNS.url(
            endpoint: "http://119.29.29.98/d", hosts: ["cloud.tencent.com"], id: "1234",
            authentication: .encrypted(cipher), families: .both, ecsIP: "1.2.3.4")
        let dn = "000102030405060708090a0b0c0d0e0f634f73a57d80af205bf7b578860c03d6bac70df3da8324c9f1185839a99d9bf2"
        let ip = try #require(cipher.encryptHex("1.2.3.4"))
        #expect(url == "http://119.29.29.98/d?dn=\(dn)&id=1234&alg=aes&ip=\(ip)&ttl=1&type=addrs&clientip=1")
        #expect(!url.contains("cloud.tencent.com"))
        #expect(!url.contains("1.2.3.4"))
    }

    @Test func badHostListsAreRefused() {
        for hosts in [[], [""], ["a.com,b.com"]] {
            #expect(throws: WireError.self) {
                try TencentHTTPDNS.url(endpoint: "http://x/d", hosts: hosts, id: "1", authentication: .token("t"), families: .ipv4, ecsIP: nil)
            }
        }
    }
}
