import Testing
@testable import HTTPDNS

@Suite struct AlibabaHTTPDNSTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    // MARK: Paths and signatures

    @Test func unsignedPaths() {
        #expect(AlibabaHTTPDNS.path(accountID: "100000", host: "www.aliyun.com") == "/100000/d?host=www.aliyun.com")
        #expect(AlibabaHTTPDNS.path(accountID: "100000", host: "www.aliyun.com", query: [.a]) == "/100000/d?host=www.aliyun.com&query=4")
        #expect(AlibabaHTTPDNS.path(accountID: "100000", host: "www.aliyun.com", query: [.aaaa]) == "/100000/d?host=www.aliyun.com&query=6")
        #expect(AlibabaHTTPDNS.path(accountID: "100000", host: "www.aliyun.com", query: [.aaaa, .a], clientIP: "2400:3200::1")
            == "/100000/d?host=www.aliyun.com&query=4,6&ip=2400:3200::1")
        #expect(AlibabaHTTPDNS.path(accountID: "100000", host: "a.com", clientIP: "1.2.3.4") == "/100000/d?host=a.com&ip=1.2.3.4")
    }

    @Test func valuesAndAccountArePercentEncoded() {
        #expect(AlibabaHTTPDNS.path(accountID: "a/b c", host: "a b&c=d+e?#") == "/a%2Fb%20c/d?host=a%20b%26c%3Dd%2Be%3F%23")
        #expect(AlibabaHTTPDNS.path(accountID: "1", host: "bücher.de") == "/1/d?host=b%C3%BCcher.de")
    }

    @Test func signKnownAnswer() {
        // printf '%s' 'www.aliyun.com-secret-1700000000' | md5sum
        #expect(AlibabaHTTPDNS.sign(host: "www.aliyun.com", secret: "secret", expiry: 1_700_000_000) == "bd61faa12226beb9ff7312480e2baf34")
    }

    @Test func signedPath() {
        let path = AlibabaHTTPDNS.path(accountID: "100000", host: "www.aliyun.com", query: [.a, .aaaa], clientIP: "1.2.3.4",
                                       signature: (secret: "secret", expiry: 1_700_000_000))
        #expect(path == "/100000/sign_d?host=www.aliyun.com&t=1700000000&s=bd61faa12226beb9ff7312480e2baf34&query=4,6&ip=1.2.3.4")
    }

    @Test func signatureUsesTheRawHostNotTheEncodedOne() {
        let path = AlibabaHTTPDNS.path(accountID: "1", host: "a b&c=d", signature: (secret: "k", expiry: 5))
        // printf '%s' 'a b&c=d-k-5' | md5sum
        #expect(path == "/1/sign_d?host=a%20b%26c%3Dd&t=5&s=52cb18a6b73144d3533692c610638fa0")
    }

    @Test func batchPaths() throws {
        #expect(try AlibabaHTTPDNS.batchPath(accountID: "100000", hosts: ["a.com", "b.com", "c.com"]) == "/100000/resolve?host=a.com,b.com,c.com")
        #expect(try AlibabaHTTPDNS.batchPath(accountID: "100000", hosts: ["a.com"], query: [.a, .aaaa]) == "/100000/resolve?host=a.com&query=4,6")
        // printf '%s' 'a.com,b.com,c.com-secret-1700000000' | md5sum
        let signed = try AlibabaHTTPDNS.batchPath(accountID: "100000", hosts: ["a.com", "b.com", "c.com"], query: [.aaaa],
                                                  signature: (secret: "secret", expiry: 1_700_000_000))
        #expect(signed == "/100000/sign_resolve?host=a.com,b.com,c.com&t=1700000000&s=7501b6a42127461399d5951a949ab1a9&query=6")
    }

    @Test func batchLimits() throws {
        let five = (1...5).map { "h\($0).com" }
        #expect(try AlibabaHTTPDNS.batchPath(accountID: "1", hosts: five).hasPrefix("/1/resolve?host=h1.com,"))
        #expect(throws: WireError.self) { try AlibabaHTTPDNS.batchPath(accountID: "1", hosts: []) }
        #expect(throws: WireError.self) { try AlibabaHTTPDNS.batchPath(accountID: "1", hosts: five + ["h6.com"]) }
        #expect(throws: WireError.self) { try AlibabaHTTPDNS.batchPath(accountID: "1", hosts: ["a.com,b.com"]) }
        #expect(throws: WireError.self) { try AlibabaHTTPDNS.batchPath(accountID: "1", hosts: ["a.com", ""]) }
        do {
            _ = try AlibabaHTTPDNS.batchPath(accountID: "1", hosts: five + ["h6.com"])
            Issue.record("six hosts accepted")
        } catch {
            #expect(error.shortDescription == "invalid_batch")
        }
    }

    // MARK: Answers

    @Test func parsesTheDocumentedSingleAnswer() throws {
        let body = #"{"host":"www.aliyun.com","ips":["1.2.3.4"],"ipsv6":["2400:3200::1"],"ttl":57,"origin_ttl":120,"client_ip":"106.11.41.215"}"#
        let answer = try AlibabaHTTPDNS.parseSingle(bytes(body))
        #expect(answer == WireAnswer(outcome: .addresses, ipv4: ["1.2.3.4"], ipv6: ["2400:3200::1"], ttl: 57, clientIP: "106.11.41.215"))
    }

    @Test(arguments: [
        (#"{"host":"a.com","ips":["1.2.3.4"],"ttl":0}"#, 60),
        (#"{"host":"a.com","ips":["1.2.3.4"],"ttl":-5}"#, 60),
        (#"{"host":"a.com","ips":["1.2.3.4"]}"#, 60),
        (#"{"host":"a.com","ips":["1.2.3.4"],"ttl":"30"}"#, 30),
        (#"{"host":"a.com","ips":["1.2.3.4"],"ttl":1e300}"#, 60),
        (#"{"host":"a.com","ips":["1.2.3.4"],"ttl":99999999999}"#, Int(Int32.max)),
    ])
    func singleTTLRules(body: String, ttl: Int) throws {
        #expect(try AlibabaHTTPDNS.parseSingle(bytes(body)).ttl == ttl)
    }

    @Test func singleIsLenient() throws {
        // Invalid addresses skipped, families sorted by the address itself, duplicates and
        // non-canonical spellings folded, unknown fields and a bad client_ip ignored.
        let body = #"{"host":"a.com","ips":["1.2.3.4","999.1.1.1","2400:3200:0::1",7,"1.2.3.4\u0000x","01.2.3.4","1.2.3.4"],"#
            + #""ipsv6":["2400:3200::1","fe80::1%eth0"],"ttl":10,"extra":{"x":[1]},"client_ip":"not-an-ip"}"#
        let answer = try AlibabaHTTPDNS.parseSingle(bytes(body))
        #expect(answer == WireAnswer(outcome: .addresses, ipv4: ["1.2.3.4"], ipv6: ["2400:3200::1"], ttl: 10, clientIP: nil))
    }

    @Test func emptyListsAreNoData() throws {
        let answer = try AlibabaHTTPDNS.parseSingle(bytes(#"{"host":"none.com","ips":[],"ipsv6":[],"ttl":30}"#))
        #expect(answer == WireAnswer(outcome: .noData, ttl: 30))
    }

    @Test func singleErrors() {
        for (body, label) in [
            ("", "malformed_json"), ("not json", "malformed_json"), ("[1,2]", "malformed_json"),
            (#"{"unrelated":1}"#, "malformed_json"), (#"{"code":"InvalidAccount"}"#, "provider_error"),
        ] {
            do {
                let answer = try AlibabaHTTPDNS.parseSingle(bytes(body))
                Issue.record("parsed \(body) as \(answer)")
            } catch {
                #expect(error.shortDescription == label, "\(body)")
            }
        }
    }

    @Test func parsesTheDocumentedBatchAnswer() throws {
        let body = #"{"dns":[{"host":"a.com","ips":["1.2.3.4"],"type":1,"ttl":31},{"host":"a.com","ips":["240e::3fa"],"type":28,"ttl":60}]}"#
        let answers = try AlibabaHTTPDNS.parseBatch(bytes(body))
        #expect(answers == ["a.com": WireAnswer(outcome: .addresses, ipv4: ["1.2.3.4"], ipv6: ["240e::3fa"], ttl: 31)])
    }

    @Test func batchMergesLowercasesAndSkipsJunk() throws {
        let body = #"{"dns":[{"host":"A.COM.","ips":["1.2.3.4"],"type":1,"ttl":0},{"host":"a.com","ips":["1.2.3.5"],"type":1,"ttl":40},"#
            + #"{"host":"b.com","ips":[],"type":28,"ttl":20},{"ips":["9.9.9.9"]},"junk",{"host":"c.com","ips":["bad"],"ttl":5}]}"#
        let answers = try AlibabaHTTPDNS.parseBatch(bytes(body))
        #expect(answers == [
            "a.com": WireAnswer(outcome: .addresses, ipv4: ["1.2.3.4", "1.2.3.5"], ttl: 40),
            "b.com": WireAnswer(outcome: .noData, ttl: 20),
            "c.com": WireAnswer(outcome: .noData, ttl: 5),
        ])
    }

    @Test func batchErrors() {
        #expect(throws: WireError.providerError(code: "InvalidHost")) { try AlibabaHTTPDNS.parseBatch(Array(#"{"code":"InvalidHost"}"#.utf8)) }
        #expect(throws: WireError.self) { try AlibabaHTTPDNS.parseBatch(Array(#"{"dns":{}}"#.utf8)) }
        #expect(throws: WireError.self) { try AlibabaHTTPDNS.parseBatch(Array("{".utf8)) }
    }

    // MARK: Errors

    @Test func errorCodes() {
        #expect(AlibabaHTTPDNS.errorCode(in: bytes(#"{"code":"InvalidAccount"}"#)) == "InvalidAccount")
        #expect(AlibabaHTTPDNS.errorCode(in: bytes(#"{"code":"ServiceLevelDeny","message":"x"}"#)) == "ServiceLevelDeny")
        #expect(AlibabaHTTPDNS.errorCode(in: bytes(#"{"code":5}"#)) == nil)
        #expect(AlibabaHTTPDNS.errorCode(in: bytes(#"{"code":""}"#)) == nil)
        #expect(AlibabaHTTPDNS.errorCode(in: bytes("<html>502</html>")) == nil)
        #expect(AlibabaHTTPDNS.errorCode(in: []) == nil)
    }

    @Test(arguments: ["UnsignedInterfaceDisabled", "SignatureExpired", "InvalidSignature", "InvalidAccount",
                      "AccountNotExists", "InvalidDuration", "InvalidHost"])
    func codesThatAreTheSameOnEveryServer(code: String) {
        #expect(!AlibabaHTTPDNS.shouldTryNextServer(errorCode: code))
    }

    @Test(arguments: ["ServiceLevelDeny", "SomethingNew", "", "invalidaccount"])
    func codesWorthAnotherServer(code: String) {
        #expect(AlibabaHTTPDNS.shouldTryNextServer(errorCode: code))
    }
}
