import Foundation
import Testing
@testable import ProxyConfig

@Suite struct DocumentationTests {
    /// docs/configuration.md, found from this file: Tests/ProxyConfigTests/X.swift -> ../../docs.
    private static func configurationDoc() throws -> String {
        var components = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        components.removeLast(3)
        let path = (components + ["docs", "configuration.md"]).joined(separator: "/")
        return try ConfigurationLoader.readFile(path)
    }

    @Test func everyOptionIsDocumented() throws {
        let doc = try Self.configurationDoc()
        for option in ConfigOption.all {
            if option.isAllowedInFlagsAndEnvironment {
                #expect(doc.contains("| `\(option.flag)` | `\(option.environmentVariable)` |"), "docs/configuration.md lacks a row for \(option.flag)")
            } else {
                // File-only options have a row keyed by the file key.
                #expect(doc.contains("| (file only) | (file only) | `\(option.name)` |"), "docs/configuration.md lacks a file-only row for \(option.name)")
                #expect(!doc.contains("`\(option.flag)`"), "docs/configuration.md documents a flag \(option.flag) that does not exist")
            }
            if let key = option.fileKey {
                #expect(doc.contains("`\(key)`"), "docs/configuration.md lacks file key \(key)")
            }
        }
    }

    /// The options table and the example file are generated (scripts/options-table.sh); the
    /// checked-in ones must be the registry's, so a changed option without regenerated docs fails here.
    @Test func theOptionsTableIsGeneratedFromTheRegistry() throws {
        let doc = try Self.configurationDoc()
        let spliced = try #require(ConfigOption.splicingGenerated(into: doc), "docs/configuration.md lacks the generated text's markers")
        #expect(spliced == doc, "docs/configuration.md's options table or example file differs from the registry: run scripts/options-table.sh")
    }

    @Test func everySecretOptionIsDocumentedAsNeverLogged() throws {
        let doc = try Self.configurationDoc()
        for option in ConfigOption.all where option.isSecret {
            #expect(doc.contains("`\(option.name)`") && doc.contains("never logged"), "\(option.name)")
        }
    }

    /// Each ```yaml block after the "Resolver providers" heading loads (as a whole config file).
    @Test func providerExamplesLoad() throws {
        let doc = try Self.configurationDoc()
        let section = try #require(doc.range(of: "## Resolver providers"))
        var rest = doc[section.upperBound...]
        if let next = rest.range(of: "\n## ") { rest = rest[..<next.lowerBound] }
        var providers: [ProviderKind] = []
        var staticSources: [StaticListSource] = []
        while let start = rest.range(of: "```yaml\n") {
            let after = rest[start.upperBound...]
            let end = try #require(after.range(of: "```"))
            let yaml = String(after[..<end.lowerBound])
            let config = try load(flags: ["config": ["p.yaml"]], files: ["p.yaml": yaml])
            providers.append(config.provider)
            if let source = config.staticListSource { staticSources.append(source) }
            rest = after[end.upperBound...]
        }
        #expect(Set(providers) == Set(ProviderKind.allCases.filter { $0 != .system }))
        #expect(staticSources.contains { if case .url = $0 { true } else { false } })
        #expect(staticSources.contains { if case .file = $0 { true } else { false } })
    }

    /// The full example file is generated from the entries' examples (scripts/options-table.sh);
    /// it must load as a whole, so the examples must go together.
    @Test func exampleFileInTheDocsLoads() throws {
        let doc = try Self.configurationDoc()
        // The first ```yaml block is the full example file.
        let start = try #require(doc.range(of: "```yaml\n"))
        let rest = doc[start.upperBound...]
        let end = try #require(rest.range(of: "```"))
        let yaml = String(rest[..<end.lowerBound])
        let config = try load(flags: ["config": ["proxy.yaml"]], files: ["proxy.yaml": yaml])
        for option in ConfigOption.all where option.isAllowedInFile && option.exampleExcludes == nil {
            #expect(valueText(config, option) != valueText(.defaults, option), "the example file leaves \(option.name) at its default")
        }
        #expect(config.configFile == "proxy.yaml")
    }
}
