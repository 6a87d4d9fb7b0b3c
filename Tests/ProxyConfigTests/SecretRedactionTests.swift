@_spi(Reflection) import Swift
import Testing
@testable import ProxyConfig

@Suite struct SecretRedactionTests {
    private static let secret = "S3cr3t-hunter2-value"
    private static let dohSecret = "DoH-ak-secret-XYZ"
    private static let aesKey = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
    private static let hexSecret = "a1b2c3d4e5f60718293a4b5c6d7e8f90"

    /// The v1 API: its secret is any text (the v2 one must be hex).
    private static func configuredWithSecrets() throws -> ProxyConfiguration {
        try load(
            flags: ["provider": ["alibaba"], "alibaba-api": ["v1"], "account-id": ["139450"], "doh-uid": ["1234"], "doh-access-key-id": ["LTAI-id"]],
            env: ["HTTPDNS_PROXY_SECRET": secret, "HTTPDNS_PROXY_DOH_ACCESS_KEY_SECRET": dohSecret, "HTTPDNS_PROXY_AES_KEY": aesKey]
        )
    }

    private static func assertNoSecrets(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!text.contains(secret), "secret leaked: \(text)", sourceLocation: sourceLocation)
        #expect(!text.contains(dohSecret), "doh-access-key-secret leaked: \(text)", sourceLocation: sourceLocation)
        #expect(!text.lowercased().contains(aesKey), "aes-key leaked: \(text)", sourceLocation: sourceLocation)
        #expect(!text.lowercased().contains(hexSecret), "hex secret leaked: \(text)", sourceLocation: sourceLocation)
    }

    @Test func descriptionsAndDumpRedactSecrets() throws {
        let config = try Self.configuredWithSecrets()
        // The values really are loaded...
        #expect(config.secret == Self.secret)
        #expect(config.dohSignature?.accessKeySecret == Self.dohSecret)
        #expect(config.aesKey == Self.aesKey)

        var dumped = ""
        dump(config, to: &dumped)
        var dumpedSignature = ""
        dump(config.dohSignature, to: &dumpedSignature)
        let mirrorValues = Mirror(reflecting: config).children.map { "\($0.value)" }.joined(separator: "\n")
        for text in [String(describing: config), String(reflecting: config), "\(config)", dumped, mirrorValues,
                     String(describing: config.dohSignature!), String(reflecting: config.dohSignature!), dumpedSignature] {
            Self.assertNoSecrets(text)
            #expect(text.contains(ProxyConfiguration.redacted))
        }
        // ...and the rest is shown, so the redaction is not just an empty description.
        let description = String(describing: config)
        #expect(description.contains("account-id: 139450"))
        #expect(description.contains("secret: <redacted>"))
        #expect(description.contains("aes-key: <redacted>"))
        #expect(description.contains("doh-uid: 1234, doh-access-key-id: LTAI-id, doh-access-key-secret: <redacted>"))
        #expect(String(describing: ProxyConfiguration.defaults).contains("secret: none"))
    }

    @Test func everyStoredPropertyIsSomeOptionsField() {
        // The description lists options, not properties; a property no option's key path reaches
        // would be missing from it (and from the reload answer).
        var stored: [(name: String, offset: Int)] = []
        _ = _forEachField(of: ProxyConfiguration.self, options: []) { name, offset, _, _ in
            stored.append((String(cString: name), offset))
            return true
        }
        #expect(stored.count > 50)
        let ends = stored.dropFirst().map(\.offset) + [MemoryLayout<ProxyConfiguration>.size]
        let reached = ConfigOption.all.compactMap { option in
            option.field.flatMap { MemoryLayout<ProxyConfiguration>.offset(of: $0.keyPath) }
        }
        // sources says where each value came from; it is shown next to the values, not as an option.
        for (property, end) in zip(stored, ends) where property.name != "dohSignature" && property.name != "sources" {
            #expect(reached.contains { $0 >= property.offset && $0 < end }, "no option sets \(property.name)")
        }
        // dohSignature is optional, so its parts' key paths (\.dohSignature?.uid) have no offset.
        #expect(ConfigOption.all.filter { $0.name.hasPrefix("doh-") && $0.field.map { MemoryLayout<ProxyConfiguration>.offset(of: $0.keyPath) == nil } == true }.count == 3)
    }

    @Test(arguments: ["secret", "doh-access-key-secret", "tencent-token", "tencent-key"])
    func badSecretValuesNeverAppearInErrors(option: String) throws {
        let bad = "\(Self.secret)\u{7}"
        let variable = try #require(ConfigOption.named(option)).environmentVariable
        var errors: [ConfigurationError?] = [
            loadError(env: [variable: bad]),
            loadError(flags: [option: [bad]]),
            loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "\(option): \"\(Self.secret)\\u0007\""]),
            loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "\(option): [\(Self.secret)]"]),
            loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "\(option): {a: \(Self.secret)}"]),
            // A YAML syntax error on the secret's line must not quote the line.
            loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "\(option): \"\(Self.secret)\nvia: x\n"]),
        ]
        errors.append(loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "\(option): \"\(Self.secret)\"\n\(option): again\n"]))
        for error in errors {
            let error = try #require(error)
            Self.assertNoSecrets(error.description)
            Self.assertNoSecrets(String(reflecting: error))
        }
        let fromEnv = try #require(errors[0])
        #expect(fromEnv == .invalidValue(option: option, value: nil, source: .environment(variable: variable),
                                         reason: "expected non-empty text without control characters"))
    }

    @Test func badAESKeysNeverAppearInErrors() throws {
        for bad in [Self.aesKey + "0", String(Self.aesKey.dropLast()) + "g", Self.aesKey + "\u{7}"] {
            let errors = [
                loadError(env: ["HTTPDNS_PROXY_AES_KEY": bad]),
                loadError(flags: ["aes-key": [bad]]),
                loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "aes-key: \"\(bad)\""]),
            ]
            for (index, error) in errors.enumerated() {
                let error = try #require(error)
                #expect(!error.description.lowercased().contains(String(Self.aesKey.prefix(20))), "\(error)")
                // (The YAML parser itself refuses the control character in the file case.)
                if index < 2 { #expect(error.description.contains("32 hex digits"), "\(error)") }
            }
        }
    }

    @Test func aNonHexV2SecretIsRejectedWithoutShowingIt() throws {
        let error = try #require(loadError(flags: ["provider": ["alibaba"], "account-id": ["1"]], env: ["HTTPDNS_PROXY_SECRET": Self.secret]))
        Self.assertNoSecrets(error.description)
        #expect(error.description.contains("not hex"), "\(error)")
        #expect(error.description.contains("--alibaba-api v2 (from defaults)"), "\(error)")
        let ok = try load(flags: ["provider": ["alibaba"], "account-id": ["1"]], env: ["HTTPDNS_PROXY_SECRET": Self.hexSecret])
        #expect(ok.secret == Self.hexSecret)
        Self.assertNoSecrets(String(describing: ok))
    }

    @Test func reloadSeesAChangedAESKey() throws {
        var changed = ProxyConfiguration.defaults
        changed.aesKey = Self.aesKey
        #expect(changed.differingOptions(from: .defaults) == ["aes-key"])
    }

    @Test func conflictErrorsWithSecretsSetDoNotShowThem() throws {
        let missingAccount = try #require(loadError(flags: ["provider": ["alibaba"]], env: ["HTTPDNS_PROXY_SECRET": Self.secret]))
        Self.assertNoSecrets(missingAccount.description)
        let partialSignature = try #require(loadError(env: ["HTTPDNS_PROXY_DOH_ACCESS_KEY_SECRET": Self.dohSecret]))
        Self.assertNoSecrets(partialSignature.description)
        #expect(partialSignature.description.contains("--doh-access-key-secret (from environment variable HTTPDNS_PROXY_DOH_ACCESS_KEY_SECRET) is set"))
    }
}
