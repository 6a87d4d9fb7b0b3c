import Testing
@testable import HTTPDNS

// Expected values computed outside Swift with coreutils, e.g.
// `printf '%s' 'abc' | sha256sum`.
@Suite struct DigestTests {
    @Test func md5KnownAnswers() {
        #expect(Digest.md5Hex("") == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(Digest.md5Hex("www.aliyun.com-secret-1700000000") == "bd61faa12226beb9ff7312480e2baf34")
        #expect(Digest.md5Hex(Array("www.aliyun.com-secret-1700000000".utf8)) == "bd61faa12226beb9ff7312480e2baf34")
    }

    @Test func sha256KnownAnswers() {
        #expect(Digest.sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Digest.sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Digest.sha256Hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func hexIsLowercaseAndPadded() {
        #expect(Digest.hexString([0x00, 0x0A, 0xFF, 0x10]) == "000aff10")
    }
}
