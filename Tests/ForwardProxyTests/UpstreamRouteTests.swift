import ProxyConfig
import Testing

@testable import ProxyHTTP
@testable import ProxyUpstream
@testable import ForwardProxy

/// Which requests are originated over TLS, to which port, with which name and pins.
@Suite struct UpstreamRouteTests {
    private func route(_ uri: String, _ configure: (inout ProxyConfiguration) -> Void = { _ in }) throws -> UpstreamRoute {
        var configuration = ProxyConfiguration.defaults
        configure(&configuration)
        return UpstreamRoute.forRequest(try RequestTarget.parseAbsolute(uri), configuration: configuration)
    }

    @Test func plainHTTPStaysPlain() throws {
        let plain = try route("http://example.com/x")
        #expect(plain.host == "example.com")
        #expect(plain.port == 80)
        #expect(plain.tls == nil)
        #expect(plain.poolKey == PoolKey(host: "example.com", port: 80, tls: false))
    }

    @Test func httpsIsTLSToTheURIPortWithTheOriginalName() throws {
        let https = try route("https://API.Example.com/x")
        #expect(https.port == 443)
        #expect(https.tls == UpstreamTLS(serverName: "api.example.com", spkiPins: [], upgraded: false))
        #expect(try route("https://api.example.com:8443/").port == 8443)
        #expect(try route("https://[2001:db8::1]:8443/").tls?.serverName == "2001:db8::1")
    }

    @Test func tlsUpgradeRuleWithoutPortSendsPort80To443() throws {
        let configure: (inout ProxyConfiguration) -> Void = { $0.tlsUpgrade = [TLSUpgradeRule(host: "api.example.com")] }
        let upgraded = try route("http://api.example.com/v1", configure)
        #expect(upgraded.port == 443)
        #expect(upgraded.tls == UpstreamTLS(serverName: "api.example.com", spkiPins: [], upgraded: true))
        // Only port 80 matches a rule without a port.
        #expect(try route("http://api.example.com:8080/", configure).tls == nil)
        #expect(try route("http://other.example.com/", configure).tls == nil)
    }

    @Test func tlsUpgradeRuleWithPortKeepsThePort() throws {
        let configure: (inout ProxyConfiguration) -> Void = { $0.tlsUpgrade = [try! TLSUpgradeRule(parsing: "*.internal.test:8080")] }
        let upgraded = try route("http://a.internal.test:8080/", configure)
        #expect(upgraded.port == 8080)
        #expect(upgraded.tls?.serverName == "a.internal.test")
        #expect(try route("http://a.internal.test/", configure).tls == nil)
        #expect(try route("http://internal.test:8080/", configure).tls == nil)
    }

    @Test func pinsFollowTheHost() throws {
        let pin = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        let configure: (inout ProxyConfiguration) -> Void = {
            $0.spkiPins = ["pinned.example.com": [pin]]
            $0.tlsUpgrade = [TLSUpgradeRule(host: "pinned.example.com")]
        }
        #expect(try route("https://pinned.example.com/", configure).tls?.spkiPins == [pin])
        #expect(try route("http://pinned.example.com/", configure).tls?.spkiPins == [pin])
        #expect(try route("https://other.example.com/", configure).tls?.spkiPins == [])
    }

    @Test func poolKeySeparatesTLSFromPlainOnTheSamePort() throws {
        let configure: (inout ProxyConfiguration) -> Void = { $0.tlsUpgrade = [TLSUpgradeRule(host: "a.test", port: 8443)] }
        let upgraded = try route("http://a.test:8443/", configure)
        let plain = try route("http://a.test:8443/")
        let https = try route("https://a.test:8443/")
        #expect(upgraded.poolKey != plain.poolKey)
        // Same name, port and TLS identity: an upgraded request may reuse an https:// connection.
        #expect(upgraded.poolKey == https.poolKey)
    }
}
