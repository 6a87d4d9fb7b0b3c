import Foundation
import Testing
@testable import HTTPDNS

@Suite struct DoHJSONTests {
    private func parse(_ body: String, name: String = "www.taobao.com", type: DNSRecordType = .a) throws -> WireAnswer {
        try DoHJSON.parse(Array(body.utf8), name: name, type: type)
    }

    private func label(_ body: String, name: String = "www.taobao.com", type: DNSRecordType = .a) -> String? {
        do {
            _ = try DoHJSON.parse(Array(body.utf8), name: name, type: type)
            return nil
        } catch {
            return error.shortDescription
        }
    }

    // MARK: URLs and signatures

    @Test func unsignedURLs() {
        #expect(DoHJSON.url(endpoint: "https://dns.alidns.com/resolve", name: "www.taobao.com", type: .a, signature: nil, timestampMillis: 0)
            == "https://dns.alidns.com/resolve?name=www.taobao.com&type=1")
        #expect(DoHJSON.url(endpoint: "https://dns.google/resolve?cd=0", name: "a b.com", type: .aaaa, edns: "1.2.3.0/24", signature: nil, timestampMillis: 0)
            == "https://dns.google/resolve?cd=0&name=a%20b.com&type=28&edns_client_subnet=1.2.3.0/24")
        #expect(DoHJSON.url(endpoint: "https://x/resolve?", name: "a.com", type: .a, signature: nil, timestampMillis: 0) == "https://x/resolve?name=a.com&type=1")
        #expect(DoHJSON.url(endpoint: "https://x/resolve?a=1&", name: "a.com", type: .a, signature: nil, timestampMillis: 0) == "https://x/resolve?a=1&name=a.com&type=1")
    }

    @Test func signKnownAnswer() {
        // printf '%s' 'uid123akSecret1700000000www.taobao.comak-id' | sha256sum
        #expect(DoHJSON.sign(uid: "uid123", accessKeySecret: "akSecret", timestamp: 1_700_000_000, name: "www.taobao.com", accessKeyID: "ak-id")
            == "57881e5653b08657a9f518ab8ef7f797873205e71efb6b3a2846ee034342c8f1")
    }

    @Test func signedURLInSeconds() {
        let signature = DoHJSONSignature(uid: "uid123", accessKeyID: "ak-id", accessKeySecret: "akSecret")
        #expect(DoHJSON.url(endpoint: "https://dns.alidns.com/resolve", name: "www.taobao.com", type: .a, signature: signature, timestampMillis: 1_700_000_000_999)
            == "https://dns.alidns.com/resolve?name=www.taobao.com&type=1&uid=uid123&ak=ak-id&ts=1700000000"
            + "&key=57881e5653b08657a9f518ab8ef7f797873205e71efb6b3a2846ee034342c8f1")
    }

    @Test func signedURLInMilliseconds() {
        let signature = DoHJSONSignature(uid: "uid123", accessKeyID: "ak-id", accessKeySecret: "akSecret", timestampUnit: .milliseconds)
        // printf '%s' 'uid123akSecret1700000000123www.taobao.com.ak-id' | sha256sum
        #expect(DoHJSON.url(endpoint: "https://dns.alidns.com/resolve", name: "www.taobao.com.", type: .aaaa, signature: signature, timestampMillis: 1_700_000_000_123)
            == "https://dns.alidns.com/resolve?name=www.taobao.com.&type=28&uid=uid123&ak=ak-id&ts=1700000000123"
            + "&key=c3a151dc4d78f3ae1ccf2c0e96363030a9c2781d67b0fdf06cc310d29089f288")
    }

    @Test func timestampUnits() {
        let millis = DoHJSONSignature(uid: "u", accessKeyID: "a", accessKeySecret: "s", timestampUnit: .milliseconds)
        let seconds = DoHJSONSignature(uid: "u", accessKeyID: "a", accessKeySecret: "s")
        #expect(seconds.timestampUnit == .seconds)
        #expect(millis.timestamp(unixTimeMillis: 2_500) == 2_500)
        #expect(seconds.timestamp(unixTimeMillis: 2_999) == 2)
        #expect(seconds.timestamp(unixTimeMillis: -1) == 0)
        #expect(millis.timestamp(unixTimeMillis: Int.min) == 0)
        #expect(millis.timestamp(unixTimeMillis: Int.max) == Int64(Int.max))
    }

    // MARK: Answers

    @Test func parsesTheDocumentedAnswerWithObjectQuestion() throws {
        let body = #"{"Status":0,"TC":false,"RD":true,"RA":true,"AD":false,"CD":false,"Question":{"name":"www.taobao.com.","type":1},"#
            + #""Answer":[{"name":"www.taobao.com.","type":5,"TTL":60,"data":"x.cdn.net."},{"name":"x.cdn.net.","type":1,"TTL":60,"data":"1.2.3.4"}]}"#
        #expect(try parse(body) == WireAnswer(outcome: .addresses, ipv4: ["1.2.3.4"], ttl: 60))
    }

    @Test func parsesGoogleStyleArrayQuestion() throws {
        let body = #"{"Status":0,"TC":false,"RD":true,"RA":true,"AD":false,"CD":false,"Question":[{"name":"dns.google.","type":28}],"#
            + #""Answer":[{"name":"dns.google.","type":28,"TTL":300,"data":"2001:4860:4860:0:0:0:0:8888"},"#
            + #"{"name":"dns.google.","type":28,"TTL":200,"data":"2001:4860:4860::8844"}],"Comment":"Response from 216.239.32.10."}"#
        #expect(try parse(body, name: "DNS.Google", type: .aaaa)
            == WireAnswer(outcome: .addresses, ipv6: ["2001:4860:4860::8888", "2001:4860:4860::8844"], ttl: 200))
    }

    @Test func followsAChainAndTakesTheMinimumTTL() throws {
        let body = #"{"Status":0,"Answer":["#
            + #"{"name":"x.cdn.net.","type":1,"TTL":600,"data":"5.6.7.8"},"#          // order does not matter
            + #"{"name":"WWW.example.com.","type":5,"TTL":30,"data":"A.example.net."},"#
            + #"{"name":"a.example.net.","type":5,"TTL":300,"data":"x.cdn.net"},"#
            + #"{"name":"x.cdn.net.","type":28,"TTL":5,"data":"2400::1"},"#           // other type: not used
            + #"{"name":"unrelated.com.","type":1,"TTL":1,"data":"9.9.9.9"},"#        // not on the chain
            + #"{"name":"x.cdn.net.","type":1,"TTL":400,"data":"bogus"}]}"#           // invalid: skipped
        #expect(try parse(body, name: "www.example.com.") == WireAnswer(outcome: .addresses, ipv4: ["5.6.7.8"], ttl: 30))
    }

    @Test func chainEndingWithoutAddressesIsNoData() throws {
        let body = #"{"Status":0,"Answer":[{"name":"a.com.","type":5,"TTL":30,"data":"b.com."},{"name":"c.com.","type":1,"TTL":30,"data":"1.1.1.1"}],"#
            + #""Authority":[{"name":"b.com.","type":6,"TTL":900,"data":"ns1.b.com. hostmaster.b.com. 2024 7200 3600 1209600 120"}]}"#
        #expect(try parse(body, name: "a.com") == WireAnswer(outcome: .noData, ttl: 120))
    }

    @Test func cnameLoopEndsWithAnError() {
        let loop = #"{"Status":0,"Answer":[{"name":"a.com.","type":5,"TTL":30,"data":"b.com."},{"name":"b.com.","type":5,"TTL":30,"data":"A.com."}]}"#
        #expect(label(loop, name: "a.com") == "cname_chain")
        let selfLoop = #"{"Status":0,"Answer":[{"name":"a.com.","type":5,"TTL":30,"data":"a.com."}]}"#
        #expect(label(selfLoop, name: "a.com") == "cname_chain")
    }

    @Test func chainLengthIsBounded() throws {
        func chain(_ links: Int) -> String {
            let records = (0..<links).map { #"{"name":"n\#($0).com.","type":5,"TTL":30,"data":"n\#($0 + 1).com."}"# }
                + [#"{"name":"n\#(links).com.","type":1,"TTL":30,"data":"1.2.3.4"}"#]
            return #"{"Status":0,"Answer":["# + records.joined(separator: ",") + "]}"
        }
        #expect(try parse(chain(16), name: "n0.com").ipv4 == ["1.2.3.4"])
        #expect(label(chain(17), name: "n0.com") == "cname_chain")
    }

    @Test func nxdomainTakesTheNegativeTTLFromTheSOA() throws {
        let body = #"{"Status":3,"TC":false,"Question":[{"name":"nope.example.com.","type":1}],"#
            + #""Authority":[{"name":"example.com.","type":6,"TTL":1800,"data":"ns.icann.org. noc.dns.icann.org. 2024081457 7200 3600 1209600 3600"}]}"#
        #expect(try parse(body, name: "nope.example.com") == WireAnswer(outcome: .nxdomain, ttl: 1800))
        let lowMinimum = body.replacingOccurrences(of: "1209600 3600", with: "1209600 60")
        #expect(try parse(lowMinimum, name: "nope.example.com") == WireAnswer(outcome: .nxdomain, ttl: 60))
        #expect(try parse(#"{"Status":3}"#) == WireAnswer(outcome: .nxdomain, ttl: nil))
        // A broken SOA is ignored, not fatal.
        #expect(try parse(#"{"Status":3,"Authority":[{"type":6,"TTL":5,"data":"only three fields"}]}"#).ttl == nil)
    }

    @Test(arguments: [(2, "servfail"), (5, "refused"), (1, "formerr"), (4, "notimp"), (99, "rcode_other")])
    func errorStatusesThrow(status: Int, expected: String) {
        #expect(label(#"{"Status":\#(status),"Answer":[{"name":"www.taobao.com.","type":1,"TTL":1,"data":"1.2.3.4"}]}"#) == expected)
        do {
            _ = try DoHJSON.parse(Array(#"{"Status":\#(status)}"#.utf8), name: "a.com", type: .a)
            Issue.record("Status \(status) accepted")
        } catch {
            #expect(error.description.contains("rcode \(status)"))
        }
    }

    @Test func noAnswerIsNoData() throws {
        #expect(try parse(#"{"Status":0}"#) == WireAnswer(outcome: .noData))
        #expect(try parse(#"{"Status":0,"Answer":[]}"#) == WireAnswer(outcome: .noData))
    }

    @Test func shortFormIsABareArray() throws {
        #expect(try parse(#"["1.2.3.4","5.6.7.8","x.cdn.net.","1.2.3.4"]"#) == WireAnswer(outcome: .addresses, ipv4: ["1.2.3.4", "5.6.7.8"], ttl: nil))
        #expect(try parse(#"["2400:3200::1"]"#, type: .aaaa) == WireAnswer(outcome: .addresses, ipv6: ["2400:3200::1"]))
        // Only the asked family is used, as with the full form.
        #expect(try parse(#"["2400:3200::1"]"#, type: .a) == WireAnswer(outcome: .noData))
        #expect(try parse("[]") == WireAnswer(outcome: .noData))
    }

    @Test func malformedBodies() {
        for body in ["", "{", "null", "1", #""str""#, #"{"Answer":[]}"#, #"{"Status":"zero"}"#, #"{"Status":0,"Answer":{}}"#] {
            #expect(label(body) == "malformed_json", "\(body)")
        }
    }
}
