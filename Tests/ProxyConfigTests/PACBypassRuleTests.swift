import Testing
@testable import ProxyConfig

@Suite struct DestinationPatternTests {
    @Test func parsesNoProxySyntax() throws {
        // curl's NO_PROXY: a domain with or without a leading dot (or "*.") is itself and its subdomains.
        #expect(try DestinationPattern(parsing: "Intranet.Example.COM.") == .domain("intranet.example.com"))
        #expect(try DestinationPattern(parsing: ".corp.example.com") == .domain("corp.example.com"))
        #expect(try DestinationPattern(parsing: "*.corp.example.com") == .domain("corp.example.com"))
        #expect(try DestinationPattern(parsing: "*") == .everything)
        #expect(try DestinationPattern(parsing: "2001:db8::1") == .block(CIDR("2001:db8::1/128")!))
        #expect(try DestinationPattern(parsing: "10.1.2.3/8") == .block(CIDR("10.0.0.0/8")!))
        #expect(try DestinationPattern(parsing: "192.0.2.7") == .block(CIDR("192.0.2.7/32")!))
        #expect(try DestinationPattern(parsing: "[fd00::1]") == .block(CIDR("fd00::1/128")!))
        #expect(try DestinationPattern(parsing: "*.corp.example.com").description == "corp.example.com")
        #expect(try DestinationPattern(parsing: "*").description == "*")
    }

    @Test(arguments: ["", "**", "*.*", "bad host", "a..b", "10.0.0.0/33", "*.", "\"quote\".example"])
    func rejectsMalformedPatterns(_ text: String) {
        #expect(throws: ConfigurationError.self) { try DestinationPattern(parsing: text) }
    }
}
