import Testing
@testable import ProxyConfig

/// Reload reports name options as `--help` spells them, from the registry: every configuration
/// field maps to registered options, and every option is some field's.
@Suite struct OptionFieldsTests {
    @Test func kebabCaseKeepsAcronymsTogether() {
        #expect(ConfigOption.kebabCase("resolverURL") == "resolver-url")
        #expect(ConfigOption.kebabCase("resolverCAFile") == "resolver-ca-file")
        #expect(ConfigOption.kebabCase("minTTL") == "min-ttl")
        #expect(ConfigOption.kebabCase("compareSystemDNS") == "compare-system-dns")
        #expect(ConfigOption.kebabCase("accountID") == "account-id")
        #expect(ConfigOption.kebabCase("threads") == "threads")
    }

    @Test func everyFieldIsSetByRegisteredOptionsAndEveryOptionSetsAField() {
        var covered: Set<String> = []
        for field in ProxyConfiguration.defaults.displayFields.map(\.name) {
            let options = ConfigOption.options(forField: field)
            #expect(!options.isEmpty, "no option sets \(field)")
            for option in options {
                #expect(ConfigOption.named(option.name) != nil, "\(option.name) for \(field) is not registered")
                covered.insert(option.name)
            }
        }
        #expect(Set(ConfigOption.all.map(\.name)).subtracting(covered).isEmpty, "options no field maps to")
    }

    @Test func changedFieldsAreReportedAsOptionNamesInHelpOrder() {
        var new = ProxyConfiguration.defaults
        new.connectPorts = [443, 8443]
        new.allowClients = [CIDR("10.0.0.0/8")!]
        new.resolverIPs = [IPAddress("192.0.2.1")!]
        new.threads = 3
        new.tencent.id = "1234"
        let fields = new.differingFields(from: .defaults)
        #expect(ConfigOption.names(ofFields: fields, new: new, old: .defaults)
            == ["resolver-ip", "tencent-id", "connect-ports", "allow-client", "threads"])
    }
}
