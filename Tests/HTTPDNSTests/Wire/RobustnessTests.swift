import Testing
@testable import HTTPDNS

/// Hostile-input properties: parsers only ever return a consistent answer or throw.
/// A trap would kill the test process, so these fail loudly on a crash as well as on
/// an inconsistent result (see `WireInvariants`).
@Suite struct RobustnessTests {
    /// Seeded, so a failure message's round number reproduces it exactly.
    @Test func randomBuffersNeverCrash() {
        var rng = SplitMix64(seed: 0x5EED_0001)
        var violations: [String] = []
        var parsedWire = 0
        for round in 0..<20_000 {
            let length = Int(rng.next() % 601)
            var buffer = rng.bytes(length)
            // Give a third of the buffers a plausible DNS response header (QR set, rcode 0,
            // small counts) so the wire parser gets past the first checks.
            if round % 3 == 0, buffer.count >= 12 {
                buffer[2] = 0x81; buffer[3] = 0x80
                for index in [4, 6, 8, 10] { buffer[index] = 0; buffer[index + 1] &= 0x07 }
            }
            if (try? DNSMessage.parse(buffer, name: "www.example.com", type: .a, expectedID: nil)) != nil { parsedWire += 1 }
            if let problem = WireInvariants.runAllParsers(buffer) {
                violations.append("round \(round): \(problem)")
            }
        }
        #expect(violations.isEmpty, "\(violations.prefix(5))")
        // The DNS-looking third must sometimes parse, or the test is not reaching the record code.
        #expect(parsedWire > 0)
    }

    @Test func mutatedWireMessagesNeverCrash() {
        let samples = [WireSamples.cnameAnswer(), WireSamples.aaaaAnswer(), WireSamples.nxdomainAnswer()]
        let problems = mutate(samples, rounds: 5_000, seed: 0x5EED_0002)
        #expect(problems.violations.isEmpty, "\(problems.violations.prefix(5))")
        // Sanity: some mutants must still parse (mutations in TTLs, addresses...), some must not.
        #expect(problems.parsed > 0)
        #expect(problems.parsed < 5_000 * samples.count)
    }

    @Test func mutatedJSONDocumentsNeverCrash() {
        let samples = [
            #"{"host":"www.aliyun.com","ips":["1.2.3.4"],"ipsv6":["2400:3200::1"],"ttl":57,"origin_ttl":120,"client_ip":"106.11.41.215"}"#,
            #"{"dns":[{"host":"a.com","ips":["1.2.3.4"],"type":1,"ttl":31},{"host":"a.com","ips":["240e::3fa"],"type":28,"ttl":60}]}"#,
            #"{"Status":0,"TC":false,"RD":true,"RA":true,"AD":false,"CD":false,"Question":{"name":"www.example.com.","type":1},"#
                + #""Answer":[{"name":"www.example.com.","type":5,"TTL":60,"data":"x.cdn.net."},{"name":"x.cdn.net.","type":1,"TTL":60,"data":"1.2.3.4"}]}"#,
            #"{"Status":3,"Authority":[{"name":"example.com.","type":6,"TTL":1800,"data":"ns.icann.org. noc.dns.icann.org. 2024081457 7200 3600 1209600 3600"}]}"#,
            #"{"service":"shenzhen-mobile","enable":1,"domainlist":[{"domain":"a.test.com","ips":["222.66.22.111","222.66.22.102"]}]}"#,
            #"["1.2.3.4","2400::1"]"#,
        ].map { Array($0.utf8) }
        let problems = mutate(samples, rounds: 5_000, seed: 0x5EED_0003)
        #expect(problems.violations.isEmpty, "\(problems.violations.prefix(5))")
    }

    @Test func deeplyNestedJSONDoesNotOverflowTheStack() {
        for depth in [600, 100_000] {
            let arrays = Array(String(repeating: "[", count: depth).utf8) + Array(String(repeating: "]", count: depth).utf8)
            let objects = Array(String(repeating: #"{"a":"#, count: depth).utf8) + [0x31] + Array(String(repeating: "}", count: depth).utf8)
            for body in [arrays, objects] {
                #expect(WireInvariants.runAllParsers(body) == nil)
                #expect(throws: WireError.self) { try AlibabaHTTPDNS.parseSingle(body) }
            }
        }
    }

    /// Flips 1...4 random bytes (sometimes also cutting or extending the buffer) of a
    /// random sample, `rounds` times per sample, and runs every parser on the mutant.
    private func mutate(_ samples: [[UInt8]], rounds: Int, seed: UInt64) -> (violations: [String], parsed: Int) {
        var rng = SplitMix64(seed: seed)
        var violations: [String] = []
        var parsed = 0
        for (sampleIndex, sample) in samples.enumerated() {
            for round in 0..<rounds {
                var mutant = sample
                for _ in 0...(rng.next() % 4) where !mutant.isEmpty {
                    let position = Int(rng.next() % UInt64(mutant.count))
                    mutant[position] ^= UInt8(truncatingIfNeeded: rng.next() | 1)
                }
                switch rng.next() % 8 {
                case 0: mutant = Array(mutant.prefix(Int(rng.next() % UInt64(mutant.count + 1))))
                case 1: mutant += rng.bytes(Int(rng.next() % 16))
                default: break
                }
                if (try? DNSMessage.parse(mutant, name: "www.example.com", type: .a, expectedID: nil)) != nil
                    || (try? DNSMessage.parse(mutant, name: "v6.example.com", type: .aaaa, expectedID: nil)) != nil
                    || (try? DNSMessage.parse(mutant, name: "nope.example.com", type: .a, expectedID: nil)) != nil {
                    parsed += 1
                }
                if let problem = WireInvariants.runAllParsers(mutant) {
                    violations.append("sample \(sampleIndex) round \(round): \(problem)")
                }
            }
        }
        return (violations, parsed)
    }
}
