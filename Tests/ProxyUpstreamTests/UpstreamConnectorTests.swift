#if canImport(Glibc)
import Glibc
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOPosix
import ProxyConfig
import Testing

@testable import ProxyKit
@testable import ProxyUpstream

/// The connector's address order, health learning and system-DNS fallback, against real sockets on
/// loopback only: a listener on 127.0.0.1:P, and 127.0.0.66:P as a dead address (nothing listens
/// there, so the kernel refuses at once).
@Suite(.timeLimit(.minutes(1))) struct UpstreamConnectorTests {
    /// Answers with fixed resolutions and counts fallbacks.
    struct FakeResolver: UpstreamResolver {
        var answer: Resolution
        var fallbackAnswer: Resolution?
        let fallbacks = NIOLockedValueBox(0)

        func resolve(host: String, port: Int, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution> {
            eventLoop.makeSucceededFuture(answer)
        }

        func fallback(after failed: Resolution, host: String, port: Int, reason: String, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution>? {
            guard let fallbackAnswer else { return nil }
            fallbacks.withLockedValue { $0 += 1 }
            return eventLoop.makeSucceededFuture(fallbackAnswer)
        }
    }

    /// A TCP listener on 127.0.0.1 that counts accepted connections.
    final class Listener: Sendable {
        let channel: any Channel
        let accepted = NIOLockedValueBox(0)
        var port: Int { channel.localAddress!.port! }

        init(group: any EventLoopGroup) async throws {
            let accepted = self.accepted
            channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    accepted.withLockedValue { $0 += 1 }
                    return channel.eventLoop.makeSucceededVoidFuture()
                }
                .bind(host: "127.0.0.1", port: 0)
                .get()
        }

        func stop() async { try? await channel.close().get() }
    }

    private static func address(_ ip: String, _ port: Int) -> SocketAddress {
        try! SocketAddress(ipAddress: ip, port: port)
    }

    private static func policy(_ blocks: String...) -> DestinationPolicy {
        DestinationPolicy(allow: blocks.map { CIDR($0)! })
    }

    private static func connect(_ connector: UpstreamConnector, on loop: any EventLoop, port: Int) async throws -> ConnectedUpstream {
        try await connector.connect(host: "origin.test", port: port, on: loop) { $0.eventLoop.makeSucceededVoidFuture() }.get()
    }

    /// The same with a `Listener` on the group, stopped before the group is shut down.
    private static func withListener(_ body: (MultiThreadedEventLoopGroup, Listener) async throws -> Void) async throws {
        try await MultiThreadedEventLoopGroup.withEventLoopGroup(numberOfThreads: 1) { group in
            let listener = try await Listener(group: group)
            do {
                try await body(group, listener)
            } catch {
                await listener.stop()
                throw error
            }
            await listener.stop()
        }
    }

    @Test func aDeadFirstAddressFailsOverAndIsDialedLastAfterwards() async throws {
        try await Self.withListener { group, listener in
            let port = listener.port
            let health = IPHealthRegistry()
            let resolver = FakeResolver(
                answer: Resolution(addresses: [Self.address("127.0.0.66", port), Self.address("127.0.0.1", port)], source: .cache))
            let connector = UpstreamConnector(resolver: resolver, policy: Self.policy("127.0.0.0/8"), connectTimeout: .seconds(5), health: health)
            let loop = group.next()

            let first = try await Self.connect(connector, on: loop, port: port)
            #expect(first.address.ipAddress == "127.0.0.1")
            #expect(first.source == .cache)
            try await first.channel.close().get()
            let dead = UpstreamEndpoint(ip: "127.0.0.66", port: port)
            let live = UpstreamEndpoint(ip: "127.0.0.1", port: port)
            #expect(health.state(of: dead) == .backoff)
            #expect(health.snapshot().first { $0.ip == "127.0.0.66" }?.lastFailure == .refused)
            #expect(connector.order(resolver.answer.addresses, avoiding: []).map(\.ipAddress) == ["127.0.0.1", "127.0.0.66"])

            let second = try await Self.connect(connector, on: loop, port: port)
            #expect(second.address.ipAddress == "127.0.0.1")
            try await second.channel.close().get()
            let snapshot = health.snapshot()
            // Not dialed again: its failure count did not grow.
            #expect(snapshot.first { $0.ip == "127.0.0.66" }?.failures == 1)
            let liveEntry = try #require(snapshot.first { $0.ip == "127.0.0.1" })
            #expect(liveEntry.successes == 2)
            #expect(liveEntry.connectMsEWMA != nil)
            #expect(health.state(of: live) == .healthy)
            #expect(resolver.fallbacks.withLockedValue { $0 } == 0)
        }
    }

    @Test func avoidedAddressesGoLast() {
        let connector = UpstreamConnector(
            resolver: FakeResolver(answer: Resolution(addresses: [], source: .cache)),
            policy: Self.policy(), connectTimeout: .seconds(1), health: IPHealthRegistry()
        )
        let input = [Self.address("192.0.2.1", 80), Self.address("192.0.2.2", 80), Self.address("192.0.2.3", 80)]
        #expect(connector.order(input, avoiding: ["192.0.2.1"]).map(\.ipAddress) == ["192.0.2.2", "192.0.2.3", "192.0.2.1"])
    }

    @Test func nioDialsInExactlyTheGivenOrder() async throws {
        let loop = EmbeddedEventLoop()
        let mixed = [Self.address("192.0.2.1", 80), Self.address("2001:db8::1", 80), Self.address("192.0.2.2", 80)]
        let resolver = FixedAddressResolver(addresses: mixed, eventLoop: loop)
        #expect(try await resolver.initiateAAAAQuery(host: "x", port: 80).get() == mixed)
        #expect(try await resolver.initiateAQuery(host: "x", port: 80).get().isEmpty)
    }

    @Test func whenEveryHTTPDNSAddressFailsSystemDNSAddressesNotTriedYetAreUsed() async throws {
        try await Self.withListener { group, listener in
            let port = listener.port
            let resolver = FakeResolver(
                answer: Resolution(addresses: [Self.address("127.0.0.66", port)], source: .httpdns),
                // The dead address again (dropped: already tried), one the policy denies, the live one.
                fallbackAnswer: Resolution(
                    addresses: [Self.address("127.0.0.66", port), Self.address("127.0.0.67", port), Self.address("127.0.0.1", port)],
                    source: .fallback
                )
            )
            let health = IPHealthRegistry()
            let connector = UpstreamConnector(
                resolver: resolver, policy: Self.policy("127.0.0.1/32", "127.0.0.66/32"), connectTimeout: .seconds(5), health: health
            )
            let connected = try await Self.connect(connector, on: group.next(), port: port)
            #expect(connected.address.ipAddress == "127.0.0.1")
            #expect(connected.source == .fallback)
            try await connected.channel.close().get()
            #expect(resolver.fallbacks.withLockedValue { $0 } == 1)
            let dialed = Set(health.snapshot().map(\.ip))
            #expect(dialed == ["127.0.0.1", "127.0.0.66"], "127.0.0.67 is denied by the policy and must never be dialed")
            #expect(health.snapshot().first { $0.ip == "127.0.0.66" }?.failures == 1, "the dead address is not dialed twice")
        }
    }

    @Test func theFallbackAddressesGoThroughThePolicy() async throws {
        try await Self.withListener { group, listener in
            let port = listener.port
            let resolver = FakeResolver(
                answer: Resolution(addresses: [Self.address("127.0.0.66", port)], source: .cache),
                fallbackAnswer: Resolution(addresses: [Self.address("127.0.0.1", port)], source: .fallback)
            )
            let connector = UpstreamConnector(resolver: resolver, policy: Self.policy("127.0.0.66/32"), connectTimeout: .seconds(5))
            let error = await #expect(throws: ProxyError.self) { try await Self.connect(connector, on: group.next(), port: port) }
            #expect(error?.message.contains("system DNS fallback: destination denied by policy") == true, "\(String(describing: error))")
            #expect(error?.message.contains("127.0.0.66: connection refused") == true, "\(String(describing: error))")
            #expect(error?.status == .badGateway)
            #expect(listener.accepted.withLockedValue { $0 } == 0)
        }
    }

    @Test func noFallbackForLiteralsOrPolicyDenials() async throws {
        try await MultiThreadedEventLoopGroup.withEventLoopGroup(numberOfThreads: 1) { group in
            let resolver = FakeResolver(
                answer: Resolution(addresses: [Self.address("127.0.0.1", 9)], source: .httpdns),
                fallbackAnswer: Resolution(addresses: [Self.address("127.0.0.1", 9)], source: .fallback)
            )
            let denying = UpstreamConnector(resolver: resolver, policy: Self.policy(), connectTimeout: .seconds(5))
            let denied = await #expect(throws: ProxyError.self) { try await Self.connect(denying, on: group.next(), port: 9) }
            #expect(denied?.status == .forbidden)
            #expect(resolver.fallbacks.withLockedValue { $0 } == 0)
            // A refused IP literal: nothing to fall back from.
            let allowing = UpstreamConnector(resolver: resolver, policy: Self.policy("127.0.0.0/8"), connectTimeout: .seconds(5))
            let literal = await #expect(throws: ProxyError.self) {
                try await allowing.connect(host: "127.0.0.66", port: 9, on: group.next()) { $0.eventLoop.makeSucceededVoidFuture() }.get()
            }
            #expect(literal?.status == .badGateway)
            #expect(resolver.fallbacks.withLockedValue { $0 } == 0)
            #expect(UpstreamConnector.fallsBack(.destinationDenied) == false)
            #expect(UpstreamConnector.fallsBack(.connectTimeout))
            #expect(UpstreamConnector.fallsBack(.tlsCertificateInvalid))
        }
    }
}

/// The per-attempt observer on an EmbeddedChannel, with a clock moved by hand.
@Suite struct ConnectAttemptObserverTests {
    /// Fails or holds every connect that reaches it (it sits nearer the head than the observer).
    final class ConnectOutcome: ChannelOutboundHandler {
        typealias OutboundIn = NIOAny
        enum Mode { case fail(any Error), hold }
        let mode: Mode
        var held: EventLoopPromise<Void>?
        init(_ mode: Mode) { self.mode = mode }

        func connect(context: ChannelHandlerContext, to address: SocketAddress, promise: EventLoopPromise<Void>?) {
            switch mode {
            case .fail(let error): promise?.fail(error)
            case .hold: held = promise
            }
        }
    }

    private static let t0 = NIODeadline.uptimeNanoseconds(5_000_000_000)
    private let target = try! SocketAddress(ipAddress: "192.0.2.7", port: 443)
    private let endpoint = UpstreamEndpoint(ip: "192.0.2.7", port: 443)

    @Test func aSuccessfulConnectTeachesItsDurationAndTheObserverLeaves() async throws {
        let clock = NIOLockedValueBox(Self.t0)
        let health = IPHealthRegistry(now: { clock.withLockedValue { $0 } })
        let channel = EmbeddedChannel()
        let observer = ConnectAttemptObserver(health: health, attempts: nil)
        try channel.pipeline.syncOperations.addHandler(observer)
        // The embedded connect completes at once, so move the clock inside the pipeline first.
        try channel.pipeline.syncOperations.addHandler(ClockMover(clock: clock, by: .milliseconds(12)), position: .first)
        try await channel.connect(to: target).get()
        #expect(health.snapshot().first?.connectMsEWMA == 12)
        #expect(health.state(of: endpoint) == .healthy)
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: ConnectAttemptObserver.self) }
        _ = try? channel.finish()
    }

    @Test func aRefusedConnectIsAFailure() async throws {
        let health = IPHealthRegistry()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ConnectOutcome(.fail(IOError(errnoCode: ECONNREFUSED, reason: "connect"))))
        try channel.pipeline.syncOperations.addHandler(ConnectAttemptObserver(health: health, attempts: nil))
        await #expect(throws: IOError.self) { try await channel.connect(to: target).get() }
        #expect(health.state(of: endpoint) == .backoff)
        #expect(health.snapshot().first?.lastFailure == .refused)
        _ = try? channel.finish()
    }

    @Test func anAbandonedConnectSaysNothingAboutTheAddress() async throws {
        let health = IPHealthRegistry()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ConnectOutcome(.fail(ChannelError.ioOnClosedChannel)))
        try channel.pipeline.syncOperations.addHandler(ConnectAttemptObserver(health: health, attempts: nil))
        await #expect(throws: ChannelError.self) { try await channel.connect(to: target).get() }
        #expect(health.snapshot().isEmpty)
        _ = try? channel.finish()
    }

    @Test func pendingAttemptsAreKnownWhenTheOverallTimeoutFires() async throws {
        let attempts = ConnectAttempts()
        let channel = EmbeddedChannel()
        let hold = ConnectOutcome(.hold)
        try channel.pipeline.syncOperations.addHandler(hold)
        try channel.pipeline.syncOperations.addHandler(ConnectAttemptObserver(health: nil, attempts: attempts))
        let connecting: EventLoopFuture<Void> = channel.connect(to: target)
        #expect(attempts.takePending() == [target])
        #expect(attempts.takePending().isEmpty)
        hold.held?.fail(ChannelError.ioOnClosedChannel)
        await #expect(throws: (any Error).self) { try await connecting.get() }
        _ = try? channel.finish()
    }

    @Test func failureKinds() {
        #expect(UpstreamFailureKind(connectError: IOError(errnoCode: ECONNREFUSED, reason: "connect")) == .refused)
        #expect(UpstreamFailureKind(connectError: IOError(errnoCode: ENETUNREACH, reason: "connect")) == .unreachable)
        #expect(UpstreamFailureKind(connectError: ChannelError.connectTimeout(.seconds(1))) == .timeout)
        #expect(UpstreamFailureKind(connectError: ChannelError.ioOnClosedChannel) == nil)
        #expect(UpstreamFailureKind(connectionError: nil) == .closed)
        #expect(UpstreamFailureKind(connectionError: IOError(errnoCode: ECONNRESET, reason: "read")) == .reset)
    }

    /// Moves the injected clock when a connect passes, standing in for time spent connecting.
    final class ClockMover: ChannelOutboundHandler {
        typealias OutboundIn = NIOAny
        let clock: NIOLockedValueBox<NIODeadline>
        let amount: TimeAmount
        init(clock: NIOLockedValueBox<NIODeadline>, by amount: TimeAmount) {
            self.clock = clock
            self.amount = amount
        }

        func connect(context: ChannelHandlerContext, to address: SocketAddress, promise: EventLoopPromise<Void>?) {
            clock.withLockedValue { $0 = $0 + amount }
            context.connect(to: address, promise: promise)
        }
    }
}
