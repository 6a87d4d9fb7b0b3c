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
            #expect(doc.contains("`\(option.flag)`"), "docs/configuration.md lacks \(option.flag)")
            #expect(doc.contains("`\(option.environmentVariable)`"), "docs/configuration.md lacks \(option.environmentVariable)")
            if let key = option.fileKey {
                #expect(doc.contains("`\(key)`"), "docs/configuration.md lacks file key \(key)")
            }
        }
    }

    @Test func exampleFileInTheDocsLoads() throws {
        let doc = try Self.configurationDoc()
        // The first ```yaml block is the full example file.
        let start = try #require(doc.range(of: "```yaml\n"))
        let rest = doc[start.upperBound...]
        let end = try #require(rest.range(of: "```"))
        let yaml = String(rest[..<end.lowerBound])
        let config = try load(flags: ["config": ["proxy.yaml"]], files: ["proxy.yaml": yaml])
        // The example sets every file key, so nothing may be left at its default by accident.
        for option in ConfigOption.all where option.isAllowedInFile {
            #expect(yaml.contains("\n\(option.name):") || yaml.hasPrefix("\(option.name):"), "example lacks \(option.name)")
        }
        #expect(config.configFile == "proxy.yaml")
    }
}
