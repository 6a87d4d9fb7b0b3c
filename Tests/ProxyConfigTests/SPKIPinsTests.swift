import Testing
@testable import ProxyConfig

@Suite struct SPKIPinsTests {
    /// base64 SHA-256 of "" and of "abc": real 32-byte digests.
    private static let pinA = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
    private static let pinB = "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="

    private func pins(_ yaml: String) throws(ConfigurationError) -> [String: [String]] {
        try load(flags: ["config": ["p.yaml"]], files: ["p.yaml": yaml]).spkiPins
    }

    private func pinsError(_ yaml: String) -> ConfigurationError? {
        loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": yaml])
    }

    @Test func parsesFlowAndBlockMappings() throws {
        #expect(try pins("spki-pins: {api.example.com: [\"\(Self.pinA)\"]}") == ["api.example.com": [Self.pinA]])
        let block = """
            spki-pins:
              API.Example.com.:
                - \(Self.pinA)
                - sha256/\(Self.pinB)
                - \(Self.pinA)
              '*.cdn.example.net': \(Self.pinB.dropLast())
              192.0.2.10: '\(Self.pinA), \(Self.pinB)'
            """
        #expect(try pins(block) == [
            "api.example.com": [Self.pinA, Self.pinB],
            "*.cdn.example.net": [Self.pinB],
            "192.0.2.10": [Self.pinA, Self.pinB],
        ])
    }

    @Test func emptyValuesMeanNoPins() throws {
        #expect(try pins("spki-pins:") == [:])
        #expect(try pins("spki-pins: {}") == [:])
        #expect(try pins("via: x") == [:])
    }

    @Test func lookupByHost() throws {
        let config = try load(flags: ["config": ["p.yaml"]], files: ["p.yaml": """
            spki-pins:
              api.example.com: [\(Self.pinA)]
              '*.example.com': [\(Self.pinB)]
            """])
        #expect(config.spkiPins(forHost: "API.example.com.") == [Self.pinA])
        #expect(config.spkiPins(forHost: "www.example.com") == [Self.pinB])
        #expect(config.spkiPins(forHost: "a.b.example.com") == nil)
        #expect(config.spkiPins(forHost: "example.com") == nil)
    }

    @Test(arguments: [
        // 20 bytes (a SHA-1), not 32.
        ("spki-pins: {a.example.com: [2jmj7l5rSw0yVb/vlWAYkK/YBwk=]}",
         "host 'a.example.com': '2jmj7l5rSw0yVb/vlWAYkK/YBwk=' is not a pin: expected base64 of a 32-byte SHA-256 digest (44 characters ending in '=')"),
        // Not base64 at all.
        ("spki-pins: {a.example.com: [not-a-pin]}",
         "host 'a.example.com': 'not-a-pin' is not a pin: expected base64 of a 32-byte SHA-256 digest (44 characters ending in '=')"),
        // URL-safe alphabet.
        ("spki-pins: {a.example.com: [47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU=]}",
         "host 'a.example.com': '47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU=' is not a pin: expected base64 of a 32-byte SHA-256 digest (44 characters ending in '=')"),
        // Non-zero unused bits: a second spelling of the same digest.
        ("spki-pins: {a.example.com: [47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFV=]}",
         "host 'a.example.com': '47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFV=' is not a pin: expected base64 of a 32-byte SHA-256 digest (44 characters ending in '=')"),
        ("spki-pins: {a.example.com: []}", "host 'a.example.com' has no pins"),
        ("spki-pins: {a.example.com: }", "host 'a.example.com' has no pins"),
        ("spki-pins: {'bad host': [47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=]}",
         "key 'bad host' is not a valid host name; expected a name like www.example.com (or a wildcard like *.example.com)"),
        ("spki-pins: {A.example.com: [47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=], a.example.com.: [47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=]}",
         "host 'a.example.com' is listed more than once"),
    ])
    func rejectsBadPinsNamingFileAndKey(yaml: String, reason: String) throws {
        let error = try #require(pinsError(yaml))
        guard case .invalidValue(option: "spki-pins", value: .some, source: .configFile(path: "p.yaml", key: "spki-pins"), let actual) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(actual == reason)
    }

    @Test(arguments: [
        ("spki-pins: [a.example.com]", "expected a mapping of host names to lists of base64 SHA-256 pins, found a list"),
        ("spki-pins: a.example.com", "expected a mapping of host names to lists of base64 SHA-256 pins, found a value"),
        ("spki-pins: {a.example.com: {x: y}}", "the value of 'a.example.com' must be a value or a list, found a mapping"),
        ("spki-pins: {a.example.com: [[x]]}", "values of 'a.example.com' must be plain values, found a list"),
    ])
    func rejectsWrongShapes(yaml: String, reason: String) {
        #expect(pinsError(yaml) == .invalidValue(option: "spki-pins", value: nil, source: .configFile(path: "p.yaml", key: "spki-pins"), reason: reason))
    }

    @Test func otherMappingValuesAreStillRejected() {
        // Only mapping options take a mapping; flat options keep their error.
        #expect(pinsError("listen: {a: b}")?.description
            == "invalid value for --listen (from config file p.yaml, key listen): expected a value, found a mapping")
    }

    @Test func unknownKeySuggestsSpkiPins() {
        #expect(pinsError("spki_pins: {}") == .unknownKey(key: "spki_pins", file: "p.yaml", suggestion: "spki-pins"))
    }
}
