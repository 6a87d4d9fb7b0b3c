import COpenSSL
import Foundation
import Testing
@testable import HTTPDNS

/// Alibaba v2 request building, signature and encryption against vectors computed independently
/// (Python's hmac/hashlib and the `cryptography` package, when these tests were written).
@Suite struct AlibabaHTTPDNSV2Tests {
    static let secretKey = Digest.bytes(fromHex: "00112233445566778899aabbccddeeff")!
    static let aesKey = Digest.bytes(fromHex: "000102030405060708090a0b0c0d0e0f")!

    private func value(_ items: [(String, String)], _ key: String) -> String? {
        items.first { $0.0 == key }?.1
    }

    // MARK: Signature

    @Test func hmacKnownAnswer() {
        // hmac.new(bytes.fromhex("00112233445566778899aabbccddeeff"),
        //   b"dn=a.example.com,b.example.com&exp=1700000600&id=139450&m=0&q=4,6&v=1.0", hashlib.sha256).hexdigest()
        #expect(Digest.hmacSHA256Hex(key: Self.secretKey, message: "dn=a.example.com,b.example.com&exp=1700000600&id=139450&m=0&q=4,6&v=1.0")
            == "74069e1d64f3b3a47d1183a298f0917018b2bf7e9ff31ba8a797f93dd0592b92")
    }

    @Test func signedPlainRequest() throws {
        let credentials = AlibabaHTTPDNSV2.Credentials(accountID: "139450", secretKey: Self.secretKey, aesKey: nil, encryption: .none)
        let items = try AlibabaHTTPDNSV2.parameters(
            hosts: ["a.example.com", "b.example.com"], query: [.a, .aaaa], credentials: credentials, expiry: 1_700_000_600, iv: [])
        #expect(items.map(\.0) == ["id", "m", "dn", "q", "v", "exp", "s"])
        #expect(AlibabaHTTPDNSV2.signedText(items) == "dn=a.example.com,b.example.com&exp=1700000600&id=139450&m=0&q=4,6&v=1.0")
        #expect(value(items, "s") == "74069e1d64f3b3a47d1183a298f0917018b2bf7e9ff31ba8a797f93dd0592b92")
        #expect(AlibabaHTTPDNSV2.path(items)
            == "/v2/d?id=139450&m=0&dn=a.example.com,b.example.com&q=4,6&v=1.0&exp=1700000600&s=74069e1d64f3b3a47d1183a298f0917018b2bf7e9ff31ba8a797f93dd0592b92")
    }

    @Test func unsignedRequestHasNoExpiryOrSignature() throws {
        let credentials = AlibabaHTTPDNSV2.Credentials(accountID: "1", secretKey: nil, aesKey: nil, encryption: .none)
        let items = try AlibabaHTTPDNSV2.parameters(hosts: ["a.test"], query: [.aaaa], credentials: credentials, expiry: 5, iv: [])
        #expect(AlibabaHTTPDNSV2.path(items) == "/v2/d?id=1&m=0&dn=a.test&q=6&v=1.0")
    }

    @Test func signedTextSkipsEmptyAndUnsignedKeysAndKeepsSdns() {
        let text = AlibabaHTTPDNSV2.signedText([("id", "1"), ("cip", ""), ("s", "x"), ("other", "y"), ("sdns-a", "b"), ("m", "0")])
        #expect(text == "id=1&m=0&sdns-a=b")
    }

    @Test func gcmRequestKnownAnswer() throws {
        let credentials = AlibabaHTTPDNSV2.Credentials(accountID: "139450", secretKey: Self.secretKey, aesKey: Self.aesKey, encryption: .gcm)
        let iv = Array(UInt8(32)..<UInt8(44))
        let items = try AlibabaHTTPDNSV2.parameters(hosts: ["a.example.com"], query: [.a], credentials: credentials, expiry: 1_700_000_600, iv: iv)
        #expect(items.map(\.0) == ["id", "m", "enc", "v", "exp", "s"])
        #expect(value(items, "m") == "2")
        // AESGCM(key).encrypt(bytes(range(32,44)), b'{"dn":"a.example.com","q":"4"}', None), IV first
        #expect(value(items, "enc") == "202122232425262728292a2b"
            + "bbd776caa4ca5b68952df7b51cbff81be6d21af3a47a08954559e523853ed9cc8c19b3f96a4f23a66c5e88d9c71a")
        #expect(value(items, "s") == "0ce00c5e9584049837752f7474afc77ac3aed808cc162828cdddb3576292a7f4")
    }

    @Test func cbcKnownAnswerAndRoundTrip() throws {
        let plain = Array(#"{"dn":"a.example.com","q":"4"}"#.utf8)
        let iv = Array(UInt8(16)..<UInt8(32))
        let sealed = try #require(AES128.cbcEncrypt(key: Self.aesKey, iv: iv, plaintext: plain))
        #expect(Digest.hex(sealed) == "12cf259cc4f738cdbed557447a85eecb54b2602908b1effb194192c7d346b6ff")
        #expect(AES128.cbcDecrypt(key: Self.aesKey, iv: iv, ciphertext: sealed) == plain)
        // A wrong key fails (bad padding) or yields other bytes, never the plaintext.
        var wrong = Self.aesKey
        wrong[0] ^= 1
        #expect(AES128.cbcDecrypt(key: wrong, iv: iv, ciphertext: sealed) != plain)
        #expect(AES128.cbcDecrypt(key: Self.aesKey, iv: iv, ciphertext: Array(sealed.dropLast())) == nil)
    }

    @Test func gcmRoundTripAndTamperDetection() throws {
        let plain = Array("hello, gcm".utf8)
        let iv = try #require(AES128.randomBytes(12))
        var sealed = try #require(AES128.gcmEncrypt(key: Self.aesKey, iv: iv, plaintext: plain))
        #expect(sealed.count == plain.count + 16)
        #expect(AES128.gcmDecrypt(key: Self.aesKey, iv: iv, sealed: sealed) == plain)
        sealed[0] ^= 0x80
        #expect(AES128.gcmDecrypt(key: Self.aesKey, iv: iv, sealed: sealed) == nil)
        #expect(AES128.gcmDecrypt(key: Self.aesKey, iv: iv, sealed: [1, 2, 3]) == nil)
        #expect(AES128.gcmEncrypt(key: [1, 2, 3], iv: iv, plaintext: plain) == nil)
    }

    @Test func randomIVsDiffer() throws {
        let a = try #require(AES128.randomBytes(16))
        let b = try #require(AES128.randomBytes(16))
        #expect(a.count == 16)
        #expect(a != b)
    }

    @Test func requestLimits() {
        let plain = AlibabaHTTPDNSV2.Credentials(accountID: "1", secretKey: nil, aesKey: nil, encryption: .none)
        #expect(throws: WireError.self) { try AlibabaHTTPDNSV2.parameters(hosts: [], query: [.a], credentials: plain, expiry: 0, iv: []) }
        #expect(throws: WireError.self) {
            try AlibabaHTTPDNSV2.parameters(hosts: (1...6).map { "h\($0).test" }, query: [.a], credentials: plain, expiry: 0, iv: [])
        }
        #expect(throws: WireError.self) { try AlibabaHTTPDNSV2.parameters(hosts: ["a,b"], query: [.a], credentials: plain, expiry: 0, iv: []) }
        let noKey = AlibabaHTTPDNSV2.Credentials(accountID: "1", secretKey: nil, aesKey: nil, encryption: .cbc)
        #expect(throws: WireError.self) { try AlibabaHTTPDNSV2.parameters(hosts: ["a"], query: [.a], credentials: noKey, expiry: 0, iv: Array(repeating: 0, count: 16)) }
        let shortIV = AlibabaHTTPDNSV2.Credentials(accountID: "1", secretKey: nil, aesKey: Self.aesKey, encryption: .gcm)
        #expect(throws: WireError.self) { try AlibabaHTTPDNSV2.parameters(hosts: ["a"], query: [.a], credentials: shortIV, expiry: 0, iv: [1]) }
    }

    @Test func credentialsDescriptionHidesKeys() {
        let credentials = AlibabaHTTPDNSV2.Credentials(accountID: "139450", secretKey: Self.secretKey, aesKey: Self.aesKey, encryption: .gcm)
        let text = "\(credentials)"
        #expect(text.contains("139450"))
        #expect(!text.contains("0, 17") && !text.contains("aabb") && !text.contains("[0, 1, 2"))
    }

    // MARK: Answers

    @Test func plainAnswerWithNoIPCodeAndZeroTTL() throws {
        let body = #"""
        {"code":"success","mode":0,"data":{"cip":"1.2.3.4","answers":[
          {"dn":"A.com.","v4":{"ips":["1.1.1.1","bogus"],"ttl":30},"v6":{"ips":[],"ttl":5,"no_ip_code":"RRNotExist"}},
          {"dn":"b.com","v4":{"ips":["2.2.2.2"],"ttl":0},"v6":{"ips":["2400:3200::1"],"ttl":-3}},
          {"dn":"c.com","v4":{"ips":[],"ttl":20,"no_ip_code":"RRNotExist"},"v6":{"ips":[],"ttl":40,"no_ip_code":"RRNotExist"}},
          {"dn":"d.com","v4":{"ips":["3.3.3.3"],"ttl":90,"no_ip_code":"Whatever"}}]}}
        """#
        let answers = try AlibabaHTTPDNSV2.parseAnswers(Array(body.utf8), aesKey: nil)
        #expect(answers["a.com"] == WireAnswer(outcome: .addresses, ipv4: ["1.1.1.1"], ttl: 30, clientIP: "1.2.3.4"))
        #expect(answers["b.com"] == WireAnswer(outcome: .addresses, ipv4: ["2.2.2.2"], ipv6: ["2400:3200::1"], ttl: 60, clientIP: "1.2.3.4"))
        #expect(answers["c.com"] == WireAnswer(outcome: .noData, ttl: 20, clientIP: "1.2.3.4"))
        // no_ip_code wins over stray addresses: no data for that family.
        #expect(answers["d.com"]?.outcome == .noData)
    }

    @Test(arguments: [AlibabaHTTPDNSV2.Encryption.cbc, .gcm])
    func encryptedAnswer(encryption: AlibabaHTTPDNSV2.Encryption) throws {
        let data = Array(#"{"answers":[{"dn":"a.com","v4":{"ips":["1.1.1.1"],"ttl":70}}]}"#.utf8)
        let iv = try #require(AES128.randomBytes(encryption.ivLength))
        let sealed = try #require(encryption == .cbc
            ? AES128.cbcEncrypt(key: Self.aesKey, iv: iv, plaintext: data)
            : AES128.gcmEncrypt(key: Self.aesKey, iv: iv, plaintext: data))
        let body = #"{"code":"success","mode":\#(encryption.mode),"data":"\#(Data(iv + sealed).base64EncodedString())"}"#
        let answers = try AlibabaHTTPDNSV2.parseAnswers(Array(body.utf8), expected: encryption, aesKey: Self.aesKey)
        #expect(answers["a.com"]?.ipv4 == ["1.1.1.1"])
        #expect(answers["a.com"]?.ttl == 70)
        var wrong = Self.aesKey
        wrong[15] ^= 0xff
        // GCM always detects a wrong key; CBC almost always (bad padding), else the bytes are not JSON.
        #expect(throws: WireError.self) { try AlibabaHTTPDNSV2.parseAnswers(Array(body.utf8), expected: encryption, aesKey: wrong) }
        if encryption == .gcm {
            #expect(throws: WireError.malformedJSON(AlibabaHTTPDNSV2.undecryptableReason)) {
                try AlibabaHTTPDNSV2.parseAnswers(Array(body.utf8), expected: encryption, aesKey: wrong)
            }
        }
        #expect(throws: WireError.self) { try AlibabaHTTPDNSV2.parseAnswers(Array(body.utf8), expected: encryption, aesKey: nil) }
        // Downgrades are refused: the clear form of the same answer, and the other cipher's mode.
        let clear = #"{"code":"success","mode":0,"data":{"answers":[{"dn":"a.com","v4":{"ips":["6.6.6.6"],"ttl":70}}]}}"#
        #expect(throws: WireError.malformedJSON(AlibabaHTTPDNSV2.undecryptableReason)) {
            try AlibabaHTTPDNSV2.parseAnswers(Array(clear.utf8), expected: encryption, aesKey: Self.aesKey)
        }
        let other: AlibabaHTTPDNSV2.Encryption = encryption == .cbc ? .gcm : .cbc
        #expect(throws: WireError.malformedJSON(AlibabaHTTPDNSV2.undecryptableReason)) {
            try AlibabaHTTPDNSV2.parseAnswers(Array(body.utf8), expected: other, aesKey: Self.aesKey)
        }
        // and an encrypted answer to a clear question is not taken either
        #expect(throws: WireError.self) { try AlibabaHTTPDNSV2.parseAnswers(Array(body.utf8), expected: .none, aesKey: Self.aesKey) }
    }

    @Test func aFailedDecryptionLeavesNoErrorOnOpenSSLsQueue() throws {
        let key = [UInt8](repeating: 7, count: 16)
        let cbcIV = [UInt8](repeating: 1, count: 16)
        var cbc = try #require(AES128.cbcEncrypt(key: key, iv: cbcIV, plaintext: Array("an answer".utf8)))
        cbc[cbc.count - 1] ^= 0x5a  // the padding no longer checks out
        ERR_clear_error()
        #expect(AES128.cbcDecrypt(key: key, iv: cbcIV, ciphertext: cbc) == nil)
        #expect(ERR_peek_error() == 0)
        let gcmIV = [UInt8](repeating: 2, count: 12)
        var gcm = try #require(AES128.gcmEncrypt(key: key, iv: gcmIV, plaintext: Array("an answer".utf8)))
        gcm[gcm.count - 1] ^= 1  // the tag does not verify
        #expect(AES128.gcmDecrypt(key: key, iv: gcmIV, sealed: gcm) == nil)
        #expect(ERR_peek_error() == 0)
    }

    @Test func aNameRepeatedManyTimesKeepsEachAddressOnce() throws {
        // 200 items for one name, 50 addresses each, half of them shared with every other item:
        // the merge keeps each address once (a quadratic merge would take ~10^8 compares here).
        var items: [String] = []
        for i in 0..<200 {
            let ips = (0..<25).map { "\"10.0.0.\($0)\"" } + (0..<25).map { "\"10.\(1 + i / 250).\(i % 250).\($0)\"" }
            items.append(#"{"dn":"a.com","v4":{"ips":[\#(ips.joined(separator: ","))],"ttl":60}}"#)
        }
        let body = #"{"code":"success","mode":0,"data":{"answers":[\#(items.joined(separator: ","))]}}"#
        let answers = try AlibabaHTTPDNSV2.parseAnswers(Array(body.utf8), aesKey: nil)
        let ipv4 = try #require(answers["a.com"]?.ipv4)
        #expect(ipv4.count == 25 + 200 * 25)
        #expect(Set(ipv4).count == ipv4.count)
    }

    @Test func errorDocumentsAndGarbage() {
        #expect(throws: WireError.providerError(code: "InvalidHost")) {
            try AlibabaHTTPDNSV2.parseAnswers(Array(#"{"code":"InvalidHost"}"#.utf8), aesKey: nil)
        }
        #expect(throws: WireError.self) { try AlibabaHTTPDNSV2.parseAnswers(Array(#"{"mode":0}"#.utf8), aesKey: nil) }
        #expect(throws: WireError.self) { try AlibabaHTTPDNSV2.parseAnswers(Array(#"{"code":"success","mode":7,"data":{}}"#.utf8), aesKey: nil) }
        #expect(throws: WireError.self) { try AlibabaHTTPDNSV2.parseAnswers(Array(#"{"code":"success","mode":2,"data":"%%%"}"#.utf8), aesKey: Self.aesKey) }
        #expect(throws: WireError.self) { try AlibabaHTTPDNSV2.parseAnswers([0xff, 0x00], aesKey: nil) }
    }

    @Test(arguments: [
        ("MissingArgument", 400, AlibabaHTTPDNSV2.ErrorClass.rejected),
        ("InvalidHost", 400, .rejected),
        ("TooManyHosts", 400, .rejected),
        ("SdnsNotSupported", 400, .rejected),
        ("InvalidAccount", 403, .credentials),
        ("InvalidSignature", 403, .credentials),
        ("MethodNotAllowed", 405, .nextServer),
        ("InternalError", 500, .nextServer),
    ])
    func errorCodes(code: String, status: Int, expected: AlibabaHTTPDNSV2.ErrorClass) {
        #expect(AlibabaHTTPDNSV2.classify(code: code, status: status) == expected)
    }

    @Test func errorStatusesWithoutCode() {
        #expect(AlibabaHTTPDNSV2.classify(code: nil, status: 503) == .nextServer)
        #expect(AlibabaHTTPDNSV2.classify(code: nil, status: 429) == .nextServer)
        #expect(AlibabaHTTPDNSV2.classify(code: nil, status: 403) == .credentials)
        #expect(AlibabaHTTPDNSV2.classify(code: nil, status: 404) == .rejected)
    }

    // MARK: Scheduling

    @Test func schedulePathsAndSignature() {
        #expect(AlibabaServiceSchedule.path(accountID: "139450", sdkVersion: "v1", signature: nil)
            == "/139450/ss?region=global&platform=linux&sdk_version=v1")
        // hashlib.md5(b"abcdef0123456789-00112233445566778899aabbccddeeff-1700000600").hexdigest()
        let signed = AlibabaServiceSchedule.path(accountID: "139450", sdkVersion: "v1",
                                                 signature: (secret: "00112233445566778899aabbccddeeff", expiry: 1_700_000_600, nonce: "abcdef0123456789"))
        #expect(signed == "/139450/ss?region=global&platform=linux&sdk_version=v1&t=1700000600&n=abcdef0123456789&s=dfa761e847bf4f3a3f97f4721ac4125e")
    }

    @Test func scheduleAnswers() throws {
        let answer = try AlibabaServiceSchedule.parse(Array(#"{"service_ip":["203.107.1.1","x"],"service_ipv6":["2401:b180::1"]}"#.utf8))
        #expect(answer == AlibabaServiceSchedule(serviceIPs: ["203.107.1.1", "2401:b180::1"], disabled: false))
        let disabled = try AlibabaServiceSchedule.parse(Array(#"{"service_ip":[],"service_status":"disable"}"#.utf8))
        #expect(disabled.disabled)
        #expect(throws: WireError.self) { try AlibabaServiceSchedule.parse(Array(#"{"service_ip":[]}"#.utf8)) }
        #expect(throws: WireError.providerError(code: "InvalidAccount")) { try AlibabaServiceSchedule.parse(Array(#"{"code":"InvalidAccount"}"#.utf8)) }
    }

    @Test func hexDecoding() {
        #expect(Digest.bytes(fromHex: "00ffAB") == [0, 255, 171])
        #expect(Digest.bytes(fromHex: "0") == nil)
        #expect(Digest.bytes(fromHex: "zz") == nil)
        #expect(Digest.bytes(fromHex: "") == [])
    }
}
