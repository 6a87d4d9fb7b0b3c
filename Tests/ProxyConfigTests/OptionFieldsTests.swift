import Testing
@testable import ProxyConfig

/// The option table: every entry carries a field, a group and docs; what reports a change (the
/// reload answer, /stats, config check) names options as `--help` spells them.
@Suite struct OptionFieldsTests {
    @Test func everyOptionHasAFieldAndDocs() {
        for option in ConfigOption.all {
            #expect(option.field != nil, "\(option.name) has no .table(...)")
            #expect(!option.doc.isEmpty, "\(option.name) has no doc text")
        }
    }

    @Test func changedOptionsAreReportedByNameInHelpOrder() {
        var new = ProxyConfiguration.defaults
        new.connectPorts = [443, 8443]
        new.allowClients = [CIDR("10.0.0.0/8")!]
        new.resolverIPs = [IPAddress("192.0.2.1")!]
        new.threads = 3
        new.tencent.id = "1234"
        #expect(new.differingOptions(from: .defaults)
            == ["threads", "resolver-ip", "tencent-id", "connect-ports", "allow-client"])
    }

    @Test func theDescriptionNamesOptionsNotFields() {
        let names = ProxyConfiguration.defaults.displayFields.map(\.name)
        #expect(names == ConfigOption.all.map(\.name))
        for name in names {
            #expect(name == name.lowercased(), "\(name) is not kebab case")
        }
        #expect(String(describing: ProxyConfiguration.defaults).contains("connect-timeout: 10s, ip-backoff: 30s"))
    }

    @Test func secretsAreComparedByValueAndShownRedacted() {
        var new = ProxyConfiguration.defaults
        new.dohSignature = DoHSignature(uid: "1", accessKeyID: "id", accessKeySecret: "s1")
        var newer = new
        newer.dohSignature?.accessKeySecret = "s2"
        #expect(newer.differingOptions(from: new) == ["doh-access-key-secret"])
        #expect(ConfigOption.dohAccessKeySecret.displayText(in: newer) == ProxyConfiguration.redacted)
        #expect(ConfigOption.dohAccessKeySecret.displayText(in: .defaults) == "none")
        #expect(ConfigOption.dohUID.displayText(in: newer) == "1")
    }

    @Test func reloadClassesAreTheTables() {
        #expect(ConfigOption.names(reloading: [.live]).isSuperset(of: ["allow-client", "connect-timeout", "spki-pins"]))
        #expect(!ConfigOption.names(reloading: [.live, .resolverService, .resolverCache, .resolverFamily]).contains("listen"))
        #expect(ConfigOption.names(reloading: [.resolverFamily]) == ["ip-family"])
    }
}
