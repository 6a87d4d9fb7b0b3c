import Logging
import ProxyConfig
import Testing

@testable import ProxyUpstream

/// What the configuration turns into, checked without sending anything anywhere.
@Suite struct ResolverStackTests {
    @Test func zeroConfigDefaultIsDoHJSONPinnedToAlibabaPublicDNS() {
        var configuration = ProxyConfiguration.defaults
        configuration.ipFamily = .ipv4
        let stack = ResolverStack(configuration: configuration, logger: Logger(label: "test"))
        defer { stack.shutdown() }
        #expect(stack.description == "json https://dns.alidns.com/resolve pinned to [223.5.5.5, 223.6.6.6] families=ipv4")
        #expect(stack.caching != nil)
        #expect(stack.upstreamResolver is HTTPDNSUpstreamResolver)
        // The cache runner, and the scheduler runner a reload to Alibaba v2 would hand a scheduler to.
        #expect(stack.services.count == 2)
        #expect(stack.schedulerSnapshot == nil)
    }

    @Test func alibabaDefaultsToV2WithServiceScheduling() {
        var configuration = ProxyConfiguration.defaults
        configuration.provider = .alibaba
        configuration.accountID = "139450"
        configuration.ipFamily = .ipv4
        let stack = ResolverStack(configuration: configuration, logger: Logger(label: "test"))
        defer { stack.shutdown() }
        #expect(stack.description.hasPrefix("alibaba api=v2 https://resolvers.httpdns.aliyuncs.com pinned to [203.107.1.1,"))
        let snapshot = stack.schedulerSnapshot
        #expect(snapshot?.source == "bootstrap")
        #expect(snapshot?.serviceIPs.first == "203.107.1.1")
        #expect(snapshot?.lastResult == nil, "nothing is fetched until the services run")

        configuration.alibabaAPI = .v1
        let v1 = ResolverStack(configuration: configuration, logger: Logger(label: "test"))
        defer { v1.shutdown() }
        #expect(v1.schedulerSnapshot == nil)
    }

    @Test func systemProviderHasNoCacheOrServices() {
        var configuration = ProxyConfiguration.defaults
        configuration.provider = .system
        let stack = ResolverStack(configuration: configuration, logger: Logger(label: "test"))
        #expect(stack.description == "system")
        #expect(stack.caching == nil)
        #expect(stack.upstreamResolver is SystemResolver)
        #expect(stack.services.isEmpty)
    }

    @Test func staticProviderRunsItsRefresher() {
        var configuration = ProxyConfiguration.defaults
        configuration.provider = .static
        configuration.staticList = "/nonexistent/list.json"
        configuration.ipFamily = .both
        let stack = ResolverStack(configuration: configuration, logger: Logger(label: "test"))
        defer { stack.shutdown() }
        #expect(stack.description.hasPrefix("static"))
        #expect(stack.services.count == 2)
    }

    @Test func fallbackCanBeTurnedOff() throws {
        var configuration = ProxyConfiguration.defaults
        configuration.systemFallback = false
        let stack = ResolverStack(configuration: configuration, logger: Logger(label: "test"))
        defer { stack.shutdown() }
        let resolver = try #require(stack.upstreamResolver as? HTTPDNSUpstreamResolver)
        #expect(resolver.system == nil)
    }
}
