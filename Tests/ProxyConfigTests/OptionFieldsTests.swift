import Foundation
import Testing
@testable import ProxyConfig

/// The option table: every entry carries a field, a group and docs; what reports a change (the
/// reload answer, /stats, config check) names options as `--help` spells them.
@Suite struct OptionFieldsTests {
    @Test func everyOptionHasAFieldAndDocs() {
        for option in ConfigOption.all {
            #expect(option.field != nil, "\(option.name) has no .table(...)")
            #expect(!option.doc.isEmpty, "\(option.name) has no doc text")
            #expect(!option.example.isEmpty, "\(option.name) has no example")
        }
    }

    /// Swift cannot list static properties, so the registry names each entry once more: an entry
    /// declared in Sources/ProxyConfig but left out of it would have no flag, key or variable.
    @Test func everyDeclaredEntryIsRegistered() throws {
        var components = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        components.removeLast(3)
        let directory = (components + ["Sources", "ProxyConfig"]).joined(separator: "/")
        let declaration = try NSRegularExpression(pattern: #"(?m)^    (?:public|package) static let (\w+) = (?:ConfigOption|\w+Option)\("#)
        var declared: [String] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: directory) where file.hasPrefix("ConfigOption") {
            let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
            for match in declaration.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                declared.append(String(text[Range(match.range(at: 1), in: text)!]))
            }
        }
        #expect(declared.count == ConfigOption.all.count,
                "\(declared.count) entries declared, \(ConfigOption.all.count) registered: add the new one to ConfigOption+Registry.swift")
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
