import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ProxyConfig
import Testing

@testable import ProxyUpstream
@testable import ProxyChecks

/// Address probing: what gets probed and when (injected dial), and real TCP probes of a live and a
/// dead loopback address teaching the health table to dial the live one first.
@Suite(.timeLimit(.minutes(1))) struct AddressProberTests {
    private static let t0 = ContinuousClock.now

    private static func prober(
        _ targets: [ProbeTarget], health: IPHealthRegistry, policy: DestinationPolicy = DestinationPolicy(allow: [CIDR("127.0.0.0/8")!]),
        dial: @escaping AddressProber.Dial
    ) -> AddressProber {
        AddressProber(
            targets: targets, health: health, settings: { .init(policy: policy, timeout: .seconds(2)) }, dial: dial,
            metrics: nil, logger: Logger(label: "test"))
    }

    @Test func onlyProbeDomainsAreQueuedAndEachAtMostOncePerTTL() {
        let prober = Self.prober([ProbeTarget(host: "api.test")], health: IPHealthRegistry()) { _, _ in .connected(.milliseconds(1)) }
        #expect(!prober.offer(host: "other.test", addresses: ["127.0.0.2"], ttl: .seconds(300), now: Self.t0))
        #expect(prober.offer(host: "api.test", addresses: ["127.0.0.2"], ttl: .seconds(300), now: Self.t0))
        // A refresh of the same name within its TTL is not probed again.
        #expect(!prober.offer(host: "api.test", addresses: ["127.0.0.2"], ttl: .seconds(300), now: Self.t0 + .seconds(225)))
        #expect(prober.offer(host: "api.test", addresses: ["127.0.0.2"], ttl: .seconds(300), now: Self.t0 + .seconds(300)))
        // After a network change the next answer is probed at once.
        prober.networkDidChange()
        #expect(prober.offer(host: "api.test", addresses: ["127.0.0.2"], ttl: .seconds(300), now: Self.t0 + .seconds(301)))
    }

    @Test func aNameListedWithTwoPortsIsProbedOnBoth() async {
        let dialed = NIOLockedValueBox<[Int]>([])
        let prober = Self.prober([ProbeTarget(host: "api.test", port: 443), ProbeTarget(host: "api.test", port: 8443)], health: IPHealthRegistry()) { address, _ in
            dialed.withLockedValue { $0.append(address.port!) }
            return .connected(.milliseconds(1))
        }
        await prober.probe(host: "api.test", addresses: ["127.0.0.2"])
        #expect(dialed.withLockedValue { $0 }.sorted() == [443, 8443])
    }

    @Test func probesGoToTheTargetPortOfAllowedAddressesOnlyAndTeachTheHealthTable() async {
        let dialed = NIOLockedValueBox<[String]>([])
        let health = IPHealthRegistry()
        let prober = Self.prober([ProbeTarget(host: "api.test", port: 8443)], health: health, policy: DestinationPolicy(allow: [])) { address, _ in
            dialed.withLockedValue { $0.append("\(address.ipAddress!):\(address.port!)") }
            return address.ipAddress == "192.0.2.1" ? .connected(.milliseconds(5)) : .failed(.refused)
        }
        // 127.0.0.1 is denied by the default policy: never dialed, not even by a probe.
        await prober.probe(host: "api.test", addresses: ["192.0.2.1", "192.0.2.2", "127.0.0.1"])
        #expect(dialed.withLockedValue { $0 }.sorted() == ["192.0.2.1:8443", "192.0.2.2:8443"])
        #expect(health.state(of: UpstreamEndpoint(ip: "192.0.2.2", port: 8443)) == .backoff)
        #expect(health.snapshot().first { $0.ip == "192.0.2.1" }?.connectMsEWMA == 5)
        #expect(health.snapshot().count == 2)
    }

    @Test func afterProbingALiveAndADeadLoopbackAddressTheLiveOneIsDialedFirst() async throws {
        // 127.0.0.2 listens; 127.0.0.3 has nothing on the same port, so connects there are refused.
        let group = MultiThreadedEventLoopGroup.singleton
        let listener = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { $0.close() }
            .bind(host: "127.0.0.2", port: 0).get()
        let port = try #require(listener.localAddress?.port)
        defer { listener.close(promise: nil) }
        let health = IPHealthRegistry()
        let dead = try SocketAddress(ipAddress: "127.0.0.3", port: port)
        let live = try SocketAddress(ipAddress: "127.0.0.2", port: port)
        // Before probing, the resolver's order stands: the dead address first.
        #expect(health.ordered([dead, live]) == [dead, live])

        let prober = AddressProber(
            targets: [ProbeTarget(host: "api.test", port: port)], health: health,
            settings: { .init(policy: DestinationPolicy(allow: [CIDR("127.0.0.0/8")!]), timeout: .seconds(5)) },
            dial: AddressProber.tcpDial(group: group), metrics: nil, logger: Logger(label: "test"))
        await prober.probe(host: "api.test", addresses: ["127.0.0.3", "127.0.0.2"])

        #expect(health.ordered([dead, live]) == [live, dead])
        #expect(health.state(of: UpstreamEndpoint(ip: "127.0.0.3", port: port)) == .backoff)
        let snapshot = health.snapshot()
        #expect(snapshot.first { $0.ip == "127.0.0.3" }?.lastFailure == .refused)
        #expect(snapshot.first { $0.ip == "127.0.0.2" }?.successes == 1)
    }

    @Test func probeTargetsParseHostAndOptionalPort() throws {
        #expect(try ProbeTarget(parsing: "API.Example.com.") == ProbeTarget(host: "api.example.com", port: 443))
        #expect(try ProbeTarget(parsing: "api.example.com:8443") == ProbeTarget(host: "api.example.com", port: 8443))
        for bad in ["api.example.com:0", "api.example.com:99999", "api.example.com:", "192.0.2.1", "[::1]:443", ":443"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try ProbeTarget(parsing: bad) }
        }
    }
}
