import Testing
@testable import ProxyConfig

/// The network value types live in NetworkTypes (a leaf: HTTPDNS uses them without ProxyConfig) and
/// keep their configuration spelling through ProxyConfig's re-export.
@Suite struct NetworkTypesTests {
    @Test func networkTypesParseWithTheirOwnErrorAndTheConfigurationsError() {
        #expect(throws: NetworkValueError.self) { try IPAddress(text: "010.0.0.1") }
        #expect(throws: ConfigurationError.malformedValue(reason: "expected an IPv4 address like 192.0.2.1 (no leading zeros) or an IPv6 address like 2001:db8::1")) {
            try IPAddress(parsing: "010.0.0.1")
        }
        #expect(throws: NetworkValueError(reason: "expected host:port like 127.0.0.1:8080, [::1]:8080 or localhost:8080 (missing ':port')")) {
            try HostPort(text: "localhost")
        }
        #expect((try? CIDR(text: "10.1.2.3/8"))?.description == "10.0.0.0/8")
        #expect(throws: ConfigurationError.self) { try HostName.normalize("*.example.com") }
        #expect((try? HostName.normalized("*.example.com", allowing: .wildcard)) == "*.example.com")
    }
}
