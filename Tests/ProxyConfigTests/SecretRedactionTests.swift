@_spi(Reflection) import Swift
import Testing
@testable import ProxyConfig

@Suite struct SecretRedactionTests {
    private static let secret = "S3cr3t-hunter2-value"
    private static let dohSecret = "DoH-ak-secret-XYZ"

    private static func configuredWithSecrets() throws -> ProxyConfiguration {
        try load(
            flags: ["provider": ["alibaba"], "account-id": ["139450"], "doh-uid": ["1234"], "doh-access-key-id": ["LTAI-id"]],
            env: ["HTTPDNS_PROXY_SECRET": secret, "HTTPDNS_PROXY_DOH_ACCESS_KEY_SECRET": dohSecret]
        )
    }

    private static func assertNoSecrets(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!text.contains(secret), "secret leaked: \(text)", sourceLocation: sourceLocation)
        #expect(!text.contains(dohSecret), "doh-access-key-secret leaked: \(text)", sourceLocation: sourceLocation)
    }

    @Test func descriptionsAndDumpRedactSecrets() throws {
        let config = try Self.configuredWithSecrets()
        // The values really are loaded...
        #expect(config.secret == Self.secret)
        #expect(config.dohSignature?.accessKeySecret == Self.dohSecret)

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
        #expect(description.contains("accountID: 139450"))
        #expect(description.contains("secret: <redacted>"))
        #expect(description.contains("uid: 1234, accessKeyID: LTAI-id, accessKeySecret: <redacted>"))
        #expect(String(describing: ProxyConfiguration.defaults).contains("secret: nil"))
    }

    @Test func displayListsEveryStoredProperty() {
        // The display list is written out by hand so it can redact; a new field must be added to it.
        var stored: [String] = []
        _ = _forEachField(of: ProxyConfiguration.self, options: []) { name, _, _, _ in
            stored.append(String(cString: name))
            return true
        }
        #expect(!stored.isEmpty)
        #expect(ProxyConfiguration.defaults.displayFields.map(\.name) == stored)
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

    @Test func conflictErrorsWithSecretsSetDoNotShowThem() throws {
        let missingAccount = try #require(loadError(flags: ["provider": ["alibaba"]], env: ["HTTPDNS_PROXY_SECRET": Self.secret]))
        Self.assertNoSecrets(missingAccount.description)
        let partialSignature = try #require(loadError(env: ["HTTPDNS_PROXY_DOH_ACCESS_KEY_SECRET": Self.dohSecret]))
        Self.assertNoSecrets(partialSignature.description)
        #expect(partialSignature.description.contains("--doh-access-key-secret (from environment variable HTTPDNS_PROXY_DOH_ACCESS_KEY_SECRET) is set"))
    }
}
