import Testing
@testable import ProxyConfig

@Suite struct TencentOptionsTests {
    static let token = "tok-Hidden-123"
    static let key = "key-Hidden-12"

    @Test func defaultsAndPerModeURL() throws {
        #expect(ProxyConfiguration.defaults.tencent == TencentSettings(mode: .https, algorithm: .aes))
        let https = try load(flags: ["provider": ["tencent"], "tencent-id": ["1234"]], env: ["HTTPDNS_PROXY_TENCENT_TOKEN": Self.token])
        #expect(https.effectiveResolverURL == "https://119.29.29.99/d")
        #expect(https.effectiveResolverIPs == [], "the default URL names the service by IP")
        let http = try load(
            flags: ["provider": ["tencent"], "tencent-id": ["1234"], "tencent-mode": ["http"]], env: ["HTTPDNS_PROXY_TENCENT_KEY": Self.key])
        #expect(http.effectiveResolverURL == "http://119.29.29.98/d")
        #expect(http.tencent == TencentSettings(mode: .http, id: "1234", key: Self.key, algorithm: .aes))
        let international = try load(flags: [
            "provider": ["tencent"], "tencent-id": ["1234"], "tencent-token": [Self.token], "resolver-url": ["https://43.132.55.56/d"],
            "tencent-ecs-ip": ["203.0.113.7"],
        ])
        #expect(international.effectiveResolverURL == "https://43.132.55.56/d")
        #expect(international.tencent.ecsIP == IPAddress("203.0.113.7"))
        #expect(ProviderKind.tencent.defaultResolverURL == "https://119.29.29.99/d")
    }

    @Test(arguments: [
        (["provider": ["tencent"]], "needs the Tencent Cloud HTTPDNS authorization ID: set --tencent-id"),
        (["provider": ["tencent"], "tencent-id": ["1"]], "with --tencent-mode https needs the HTTPS token: set --tencent-token"),
        (["provider": ["tencent"], "tencent-id": ["1"], "tencent-mode": ["http"], "tencent-token": [token]],
         "with --tencent-mode http needs the AES key: set --tencent-key"),
        (["provider": ["tencent"], "tencent-id": ["1"], "tencent-mode": ["http"], "tencent-key": ["0123456789abcdefg"]],
         "--tencent-key has 17 bytes but --tencent-alg aes needs 1 to 16"),
        (["provider": ["tencent"], "tencent-id": ["1"], "tencent-mode": ["http"], "tencent-alg": ["des"], "tencent-key": [key]],
         "--tencent-key has 13 bytes but --tencent-alg des needs exactly 8"),
    ] as [([String: [String]], String)])
    func missingOrUnfitSettingsAreClearConflicts(flags: [String: [String]], message: String) throws {
        let error = try #require(loadError(flags: flags))
        #expect(error.description.contains(message), "\(error)")
        #expect(!error.description.contains(Self.token) && !error.description.contains(Self.key) && !error.description.contains("abcdefg"))
    }

    @Test func validCombinations() throws {
        let des = try load(flags: ["provider": ["tencent"], "tencent-id": ["1"], "tencent-mode": ["http"], "tencent-alg": ["des"], "tencent-key": ["8charkey"]])
        #expect(des.tencent.algorithm == .des)
        // Settings for another provider are accepted and ignored, like account-id with json.
        #expect(try load(flags: ["tencent-mode": ["http"]]).provider == .json)
    }

    @Test(arguments: [("tencent-mode", "tls"), ("tencent-alg", "3des"), ("tencent-ecs-ip", "1.2.3"), ("tencent-id", "12 34")])
    func malformedValues(option: String, value: String) throws {
        let error = try #require(loadError(flags: [option: [value]]))
        #expect(error.description.contains(option), "\(error)")
    }

    @Test func tokenAndKeyAreRedactedButTheirChangesSeen() throws {
        let config = try load(
            flags: ["provider": ["tencent"], "tencent-id": ["1234"]],
            env: ["HTTPDNS_PROXY_TENCENT_TOKEN": Self.token, "HTTPDNS_PROXY_TENCENT_KEY": Self.key])
        #expect(config.tencent.token == Self.token)
        var dumped = ""
        dump(config, to: &dumped)
        var dumpedSettings = ""
        dump(config.tencent, to: &dumpedSettings)
        for text in [String(describing: config), String(reflecting: config), dumped, dumpedSettings, String(reflecting: config.tencent)] {
            #expect(!text.contains(Self.token) && !text.contains(Self.key), "\(text)")
        }
        #expect(String(describing: config).contains("tencent-mode: https, tencent-id: 1234, tencent-token: <redacted>, tencent-key: <redacted>, tencent-alg: aes, tencent-ecs-ip: none"))
        var changed = config
        changed.tencent.token = "another"
        #expect(changed.differingOptions(from: config) == ["tencent-token"])
    }
}
