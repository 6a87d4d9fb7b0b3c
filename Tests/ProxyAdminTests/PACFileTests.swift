import NIOCore
import ProxyConfig
import Testing

@testable import ProxyAdmin

@Suite struct PACFileTests {
    @Test func javaScriptStringsCannotBreakOut() {
        #expect(PACFile.javaScriptString("a.example") == "\"a.example\"")
        #expect(PACFile.javaScriptString("x\"; alert(1); \"") == "\"x\\\"; alert(1); \\\"\"")
        #expect(PACFile.javaScriptString("\\") == "\"\\\\\"")
        #expect(PACFile.javaScriptString("</script>\n\u{2028}'") == "\"\\u003c/script\\u003e\\u000a\\u2028\\u0027\"")
    }

    @Test func rendersProxyAndBypassLists() throws {
        let rules = try ["intranet.example.com", "*.corp.example.com", ".lab.example.org", "10.0.0.0/8", "fd00::/8"].map { try DestinationPattern(parsing: $0) }
        let pac = PACFile.render(proxy: HostPort(host: "proxy.example.com", port: 3128), bypass: rules)
        #expect(pac.contains("var PROXY = \"PROXY proxy.example.com:3128\";"))
        #expect(pac.contains("var BYPASS_ALL = false;"))
        #expect(pac.contains("var BYPASS_DOMAINS = [\"intranet.example.com\", \"corp.example.com\", \"lab.example.org\"];"))
        #expect(pac.contains("var BYPASS_IPV4 = [[167772160, 8]];"))
        #expect(pac.contains("var BYPASS_IPV6 = [[[64768, 0, 0, 0, 0, 0, 0, 0], 8]];"))
        #expect(pac.contains("function FindProxyForURL(url, host)"))
        for resolving in ["dnsResolve(", "isInNet(", "myIpAddress(", "isResolvable("] {
            #expect(!pac.contains(resolving), "a PAC file that resolves names leaks them to the local resolver")
        }
    }

    @Test func anAsteriskBypassesEverything() throws {
        let pac = PACFile.render(proxy: HostPort(host: "proxy.example.com", port: 3128), bypass: [try DestinationPattern(parsing: "*")])
        #expect(pac.contains("var BYPASS_ALL = true;"))
        #expect(pac.contains("var BYPASS_DOMAINS = [];"))
    }

    @Test func theProxyAddressFollowsTheListenerUnlessConfigured() throws {
        let bound = try SocketAddress(ipAddress: "127.0.0.1", port: 41234)
        let loopback = PACSettings(configured: nil, listen: HostPort(host: "127.0.0.1", port: 0), bypass: [], boundAddress: { bound })
        #expect(loopback.proxyAddress(requestHost: "evil.example").description == "127.0.0.1:41234")

        let configured = PACSettings(configured: HostPort(host: "proxy.example.com", port: 3128), listen: HostPort(host: "0.0.0.0", port: 8080), bypass: [])
        #expect(configured.proxyAddress(requestHost: "x.example").description == "proxy.example.com:3128")

        let wildcard = PACSettings(configured: nil, listen: HostPort(host: "0.0.0.0", port: 8080), bypass: [])
        #expect(wildcard.proxyAddress(requestHost: "gateway.lan:8081").description == "gateway.lan:8080")
        #expect(wildcard.proxyAddress(requestHost: "[2001:db8::5]:8081").description == "[2001:db8::5]:8080")
        #expect(wildcard.proxyAddress(requestHost: "192.0.2.4").description == "192.0.2.4:8080")
        #expect(wildcard.proxyAddress(requestHost: nil).description == "127.0.0.1:8080")
        #expect(wildcard.proxyAddress(requestHost: "bad host\"").description == "127.0.0.1:8080")
        #expect(wildcard.proxyAddress(requestHost: "0.0.0.0:8081").description == "127.0.0.1:8080")
        let v6Wildcard = PACSettings(configured: nil, listen: HostPort(host: "::", port: 8080), bypass: [])
        #expect(v6Wildcard.proxyAddress(requestHost: "10.1.2.3:8081").description == "10.1.2.3:8080")
    }
}
