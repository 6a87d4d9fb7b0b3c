import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ProxyAdmin
import ProxyConfig
import ProxyKit
import ServiceLifecycle
import Testing

@testable import DNSListener
@testable import NetworkWatch
@testable import ProxyApp

/// The composition root without a command line: what a configuration turns into, and the composed
/// proxy serving on loopback.
@Suite struct ProxyApplicationTests {
    static func configuration(_ change: (inout ProxyConfiguration) -> Void = { _ in }) -> ProxyConfiguration {
        var configuration = ProxyConfiguration.defaults
        configuration.listen = HostPort(host: "127.0.0.1", port: 0)
        configuration.adminListen = nil
        configuration.provider = .system
        configuration.networkMonitor = false
        configuration.metrics = false
        change(&configuration)
        return configuration
    }

    static func make(
        _ configuration: ProxyConfiguration, group: any EventLoopGroup, hooks: ProxyApplication.Hooks? = nil
    ) throws -> ProxyApplication {
        try ProxyApplication(
            configuration: configuration, group: group, accessLog: try AccessLogWriter(target: .off), metrics: nil,
            hooks: hooks ?? ProxyApplication.Hooks(load: { configuration }, version: "test"), logger: Logger(label: "test"))
    }

    static func names(_ services: [any Service]) -> [String] {
        services.map { "\(type(of: $0))" }.filter { !$0.contains("Resolver") && !$0.contains("Caching") }
    }

    @Test func theBareProxyIsOneListener() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let application = try Self.make(Self.configuration(), group: group)
        defer { application.shutdown() }
        #expect(Self.names(application.services) == ["ProxyServer"])
    }

    @Test func everyListenerAskedForIsAServiceAndTheProxyStopsFirst() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let configuration = Self.configuration {
            $0.adminListen = HostPort(host: "127.0.0.1", port: 0)
            $0.dnsListen = HostPort(host: "127.0.0.1", port: 0)
            $0.dohListen = HostPort(host: "127.0.0.1", port: 0)
            $0.networkMonitor = true
        }
        let application = try Self.make(configuration, group: group)
        defer { application.shutdown() }
        // A service group stops services in reverse: the proxy (and the monitor) before the
        // admin listener, so /healthz says "draining" while the proxy drains.
        #expect(Self.names(application.services) == ["AdminServer", "DNSServer", "DoHServer", "ProxyServer", "NetworkMonitor"])
    }

    @Test func aConfigurationTheProxyCannotStartWithThrows() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let configuration = Self.configuration { $0.caFile = "/nonexistent/ca.pem" }
        #expect(throws: ProxyServerSetupError.self) { try Self.make(configuration, group: group) }
    }

    /// Runs the composed services, reaches the proxy listener with a real client and gets the
    /// proxy's own answer to an origin-form request; a reload goes through the hooks' loader.
    @Test func theComposedProxyServesAndReloads() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let (bound, boundContinuation) = AsyncStream<Void>.makeStream()
        let loads = NIOLockedValueBox(0)
        let configuration = Self.configuration()
        let reloaded = Self.configuration { $0.proxyAuthRealm = "reloaded realm" }
        let hooks = ProxyApplication.Hooks(
            load: {
                loads.withLockedValue { $0 += 1 }
                return reloaded
            },
            ready: { boundContinuation.yield() }, version: "test")
        let application = try Self.make(configuration, group: group, hooks: hooks)
        let serviceGroup = ServiceGroup(
            configuration: .init(services: application.services.map { .init(service: $0) }, logger: Logger(label: "test")))
        async let running: Void = serviceGroup.run()

        var readiness = bound.makeAsyncIterator()
        _ = await readiness.next()
        let address = try #require(application.proxy.boundAddress)
        let answer = try await Self.exchange("GET / HTTP/1.1\r\nHost: example.test\r\n\r\n", with: address, group: group)
        #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(answer)")
        #expect(answer.contains("origin_form_request"), "\(answer)")

        let outcome = application.reloader.reload(trigger: "test")
        #expect(outcome.ok, "\(outcome.message)")
        #expect(outcome.applied.contains("proxy-auth-realm"), "\(outcome.applied)")
        #expect(loads.withLockedValue { $0 } == 1)

        await serviceGroup.triggerGracefulShutdown()
        try await running
        application.shutdown()
        try await group.shutdownGracefully()
    }

    /// Writes `request` and reads until the proxy closes.
    static func exchange(_ request: String, with address: SocketAddress, group: any EventLoopGroup) async throws -> String {
        let channel = try await ClientBootstrap(group: group).connect(to: address) { channel in
            channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
        }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: request))
            var received = ByteBuffer()
            for try await chunk in inbound { received.writeImmutableBuffer(chunk) }
            return String(buffer: received)
        }
    }
}
