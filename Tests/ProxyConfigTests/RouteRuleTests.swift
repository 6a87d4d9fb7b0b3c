import ProxyConfig
import Testing

@Suite("route rules")
struct RouteRuleTests {
    @Test func parsesPatternEqualsAction() throws {
        #expect(try RouteRule(parsing: "*.Ads.Example=deny") == RouteRule(pattern: .domain("ads.example"), action: .deny))
        #expect(try RouteRule(parsing: "api.corp.example=DIRECT").action == .direct)
        #expect(try RouteRule(parsing: "10.0.0.0/8=deny").pattern == .block(try CIDR(parsing: "10.0.0.0/8")))
        #expect(try RouteRule(parsing: "[2001:db8::1]=deny").description == "2001:db8::1/128=deny")
        #expect(try RouteRule(parsing: "*=deny").pattern == .everything)
        for (text, reason) in [
            ("ads.example", "has no action"), ("ads.example=block", "'block' is not an action"), ("=deny", "no destination"),
            ("ads..example=deny", "expected a domain"), ("10.0.0.0/33=deny", ""),
        ] {
            #expect(throws: ConfigurationError.self, "\(text)") { _ = try RouteRule(parsing: text) }
            if !reason.isEmpty {
                do {
                    _ = try RouteRule(parsing: text)
                } catch {
                    #expect("\(error)".contains(reason), "\(text): \(error)")
                }
            }
        }
    }

    @Test func domainsMatchThemselvesAndSubdomainsOnly() throws {
        let pattern = try DestinationPattern(parsing: ".corp.example")
        for host in ["corp.example", "api.corp.example", "a.b.corp.example", "API.Corp.Example", "api.corp.example."] {
            #expect(pattern.matches(host: host), "\(host)")
        }
        for host in ["notcorp.example", "corp.example.other", "example", "10.0.0.1", ""] {
            #expect(!pattern.matches(host: host), "\(host)")
        }
    }

    @Test func blocksMatchIPLiteralsNeverNames() throws {
        let v4 = try DestinationPattern(parsing: "10.0.0.0/8")
        #expect(v4.matches(host: "10.1.2.3"))
        #expect(v4.matches(host: "::ffff:10.1.2.3"), "an IPv4-mapped literal is its IPv4 address")
        #expect(!v4.matches(host: "11.1.2.3"))
        #expect(!v4.matches(host: "10.example"), "a name is never resolved to test it")
        let v6 = try DestinationPattern(parsing: "2001:db8::/32")
        #expect(v6.matches(host: "[2001:db8::7]") && v6.matches(host: "2001:DB8::7"))
        #expect(!v6.matches(host: "2001:db9::7"))
        #expect(try DestinationPattern(parsing: "*").matches(host: "anything.example"))
    }

    @Test func theFirstMatchingRuleDecides() throws {
        let rules = try ["api.corp.example=direct", ".corp.example=deny", "*.ads.example=deny"].map { try RouteRule(parsing: $0) }
        #expect(rules.firstMatch(host: "api.corp.example")?.rule.action == .direct)
        #expect(rules.firstMatch(host: "x.api.corp.example")?.rule.action == .direct)
        #expect(rules.firstMatch(host: "www.corp.example")?.position == 2)
        #expect(rules.firstMatch(host: "tracker.ads.example")?.position == 3)
        #expect(rules.firstMatch(host: "example.org") == nil)
    }
}

@Suite("parent proxy URL")
struct ParentProxyURLTests {
    @Test func parsesHostPortAndPercentEncodedCredentials() throws {
        let parent = try ParentProxy(parsing: "http://alice:s%40cret%3Ax@proxy.corp.example:3128/")
        #expect(parent == ParentProxy(host: "proxy.corp.example", port: 3128, credentials: "alice:s@cret:x"))
        #expect(parent.description == "http://alice:***@proxy.corp.example:3128", "the password never shows")
        let v6 = try ParentProxy(parsing: "HTTP://[fd00::3]:8080")
        #expect(v6.endpoint == "[fd00::3]:8080" && v6.credentials == nil)
        let secure = try ParentProxy(parsing: "https://bob:pw@proxy.corp.example:3129")
        #expect(secure == ParentProxy(host: "proxy.corp.example", port: 3129, credentials: "bob:pw", tls: true))
        #expect(secure.description == "https://bob:***@proxy.corp.example:3129" && secure.scheme == "https")
        #expect(try ParentProxy(parsing: "http://proxy:3128").tls == false)
        for bad in ["proxy.corp.example:3128", "socks5://proxy:1080", "https://proxy", "http://proxy", "http://proxy:3128/path", "http://:pw@proxy:3128", "http://alice@proxy:3128"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { _ = try ParentProxy(parsing: bad) }
        }
    }

    @Test func aParentRuleNeedsAParentAndNoRuleMeansTheParent() throws {
        var configuration = ProxyConfiguration.defaults
        configuration.routes = try ["api.corp.test=direct", ".corp.test=deny", "*.vendor.test=parent"].map { try RouteRule(parsing: $0) }
        #expect(configuration.parentProxy(forHost: "origin.test") == nil, "no parent set: direct")
        configuration.parentProxy = ParentProxy(host: "10.0.0.3", port: 3128)
        #expect(configuration.parentProxy(forHost: "origin.test")?.endpoint == "10.0.0.3:3128")
        #expect(configuration.parentProxy(forHost: "a.vendor.test") != nil)
        #expect(configuration.parentProxy(forHost: "api.corp.test") == nil)
        #expect(configuration.parentProxy(forHost: "www.corp.test") == nil, "denied: no parent either")
    }
}
