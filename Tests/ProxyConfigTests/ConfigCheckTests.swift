import Testing
@testable import ProxyConfig

/// What `httpdns-proxy config check` and the serve start-up print.
@Suite struct ConfigCheckTests {
    @Test func aMisspeltVariableGetsTheSuggestionAFlagGets() {
        #expect(ConfigurationLoader.closestEnvironmentVariable(to: "HTTPDNS_PROXY_LISTN") == "HTTPDNS_PROXY_LISTEN")
        #expect(ConfigurationLoader.closestEnvironmentVariable(to: "HTTPDNS_PROXY_CONECT_TIMEOUT") == "HTTPDNS_PROXY_CONNECT_TIMEOUT")
        #expect(ConfigurationLoader.closestEnvironmentVariable(to: "HTTPDNS_PROXY_COLOUR") == nil)
        #expect(ConfigurationLoader.closestEnvironmentVariable(to: "HTTPDNS_PROXY_SPKI_PIN") == nil,
                "spki-pins can only be set in the file, so its variable is no suggestion")
        let warnings = ConfigurationLoader.environmentWarnings(in: [
            "HTTPDNS_PROXY_LISTN": "x", "HTTPDNS_PROXY_LISTEN": "y", "HTTPDNS_PROXY_COLOUR": "z", "PATH": "/bin",
        ])
        #expect(warnings == [
            "unknown environment variable HTTPDNS_PROXY_COLOUR is ignored",
            "unknown environment variable HTTPDNS_PROXY_LISTN is ignored (did you mean HTTPDNS_PROXY_LISTEN?)",
        ])
    }

    @Test func theReportNamesOptionsAsUsersSpellThemAndRedactsSecrets() throws {
        let configuration = try load(env: ["HTTPDNS_PROXY_SECRET": "hunter2-secret", "HTTPDNS_PROXY_LISTEN": "127.0.0.1:9999"])
        let report = configuration.checkReport
        #expect(report.contains("\nlisten: 127.0.0.1:9999\n") || report.hasPrefix("listen: 127.0.0.1:9999\n"), "\(report)")
        #expect(report.contains("\nsecret: <redacted>\n"), "\(report)")
        #expect(!report.contains("hunter2"))
        #expect(report.contains("\nresolver-ip: "))
        let labels = report.split(separator: "\n").map { String($0.prefix { $0 != ":" }) }
        #expect(labels.count == configuration.displayFields.count)
        let camel = labels.filter { $0.contains { $0.isUppercase } }
        #expect(camel.isEmpty, "field names instead of option names: \(camel)")
    }
}
