import Foundation
import Logging
import NIOEmbedded
import ProxyConfig
import Testing

@testable import ProxyUpstream

/// What the configuration turns into, checked without sending anything anywhere.
@Suite struct ResolverStackTests {
    /// The resolver behind the hosts file, which is always in front.
    static func inner(_ stack: ResolverStack) -> (any UpstreamResolver)? {
        (stack.upstreamResolver as? LocalRecordsResolver)?.inner
    }

    /// `--hosts-file`: read at start, in front of the provider, and shared with the DNS listener.
    @Test func theHostsFileIsAskedFirst() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("stack-hosts-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "127.0.0.9 origin.test\n".write(toFile: path, atomically: true, encoding: .utf8)
        var configuration = ProxyConfiguration.defaults
        configuration.provider = .system
        configuration.hostsFile = path
        let stack = ResolverStack(configuration: configuration, logger: Logger(label: "test"))
        let resolution = try await stack.upstreamResolver.resolve(host: "origin.test", port: 80, on: EmbeddedEventLoop()).get()
        #expect(resolution.source == .local && resolution.addresses.compactMap(\.ipAddress) == ["127.0.0.9"])
        #expect(stack.localRecords.path == path)
        try "127.0.0.10 origin.test\n".write(toFile: path, atomically: true, encoding: .utf8)
        stack.localRecords.use(try #require(try stack.localRecords.readAgain()))
        #expect(stack.localRecords.addresses(of: "origin.test")?.ipv4 == ["127.0.0.10"])
    }

    @Test func zeroConfigDefaultIsDoHJSONPinnedToAlibabaPublicDNS() {
        var configuration = ProxyConfiguration.defaults
        configuration.ipFamily = .ipv4
        let stack = ResolverStack(configuration: configuration, logger: Logger(label: "test"))
        defer { stack.shutdown() }
        #expect(stack.description == "json https://dns.alidns.com/resolve pinned to [223.5.5.5, 223.6.6.6] families=ipv4")
        #expect(stack.caching != nil)
        #expect(Self.inner(stack) is HTTPDNSUpstreamResolver)
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
        #expect(Self.inner(stack) is SystemResolver)
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
        let resolver = try #require(Self.inner(stack) as? HTTPDNSUpstreamResolver)
        #expect(resolver.system == nil)
    }
}
