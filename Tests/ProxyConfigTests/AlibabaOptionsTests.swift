import NIOCore
import Testing
@testable import ProxyConfig

/// `alibaba-api`, `alibaba-encryption`, `aes-key` and `scheduler-refresh`.
@Suite struct AlibabaOptionsTests {
    private static let base = ["provider": ["alibaba"], "account-id": ["139450"]]

    @Test func defaults() throws {
        let config = try load(flags: Self.base)
        #expect(config.alibabaAPI == .v2)
        #expect(config.alibabaEncryption == .none)
        #expect(config.aesKey == nil)
        #expect(config.schedulerRefresh == .hours(1))
    }

    @Test func valuesFromEverySource() throws {
        let flags = try load(flags: Self.base.merging([
            "alibaba-api": ["v1"], "scheduler-refresh": ["0"],
        ]) { $1 })
        #expect(flags.alibabaAPI == .v1)
        #expect(flags.schedulerRefresh == .zero)
        let env = try load(flags: Self.base, env: [
            "HTTPDNS_PROXY_ALIBABA_ENCRYPTION": "gcm", "HTTPDNS_PROXY_AES_KEY": "000102030405060708090A0B0C0D0E0F",
            "HTTPDNS_PROXY_SCHEDULER_REFRESH": "10m",
        ])
        #expect(env.alibabaEncryption == .gcm)
        #expect(env.aesKey == "000102030405060708090A0B0C0D0E0F")
        #expect(env.schedulerRefresh == .minutes(10))
        let file = try load(flags: ["config": ["p.yaml"]], files: ["p.yaml": """
            provider: alibaba
            account-id: "139450"
            alibaba-encryption: cbc
            aes-key: 000102030405060708090a0b0c0d0e0f
            secret: 00112233445566778899aabbccddeeff
            """])
        #expect(file.alibabaEncryption == .cbc)
        #expect(file.secret == "00112233445566778899aabbccddeeff")
    }

    @Test func badKeywordsAreExplained() throws {
        let api = try #require(loadError(flags: Self.base.merging(["alibaba-api": ["v3"]]) { $1 }))
        #expect(api.description.contains("expected one of: v1, v2"))
        let encryption = try #require(loadError(flags: Self.base.merging(["alibaba-encryption": ["aes"]]) { $1 }))
        #expect(encryption.description.contains("expected one of: none, cbc, gcm"))
    }

    @Test func encryptionNeedsAKeyAndV2() throws {
        let missingKey = try #require(loadError(flags: Self.base.merging(["alibaba-encryption": ["gcm"]]) { $1 }))
        #expect(missingKey.description.contains("needs the account's AES key: set --aes-key"), "\(missingKey)")
        let v1 = try #require(loadError(flags: Self.base.merging([
            "alibaba-encryption": ["cbc"], "alibaba-api": ["v1"], "aes-key": ["000102030405060708090a0b0c0d0e0f"],
        ]) { $1 }))
        #expect(v1.description.contains("needs --alibaba-api v2"), "\(v1)")
        // Other providers ignore the Alibaba settings.
        #expect(loadError(flags: ["provider": ["json"], "alibaba-encryption": ["gcm"]]) == nil)
    }

    @Test func v2SecretMustBeHexButV1SecretNeedNot() throws {
        #expect(loadError(flags: Self.base, env: ["HTTPDNS_PROXY_SECRET": "abc"]) != nil, "odd length")
        #expect(loadError(flags: Self.base, env: ["HTTPDNS_PROXY_SECRET": "０１"]) != nil, "fullwidth digits are not hex")
        #expect(loadError(flags: Self.base.merging(["alibaba-api": ["v1"]]) { $1 }, env: ["HTTPDNS_PROXY_SECRET": "any text"]) == nil)
    }
}
