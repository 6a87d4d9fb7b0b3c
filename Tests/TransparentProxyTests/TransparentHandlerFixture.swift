import Logging
import NIOCore
import NIOEmbedded
import ProxyAccess
import ProxyConfig
import ProxyKit

@testable import ForwardProxy
@testable import ProxyUpstream
@testable import TransparentProxy

/// Hands out EmbeddedChannels on the test's loop instead of dialing, and remembers what was asked.
final class EmbeddedUpstreams: UpstreamConnecting, @unchecked Sendable {
    struct Call: Equatable {
        var host: String
        var port: Int
    }

    let loop: EmbeddedEventLoop
    private(set) var calls: [Call] = []
    private(set) var channels: [EmbeddedChannel] = []

    init(loop: EmbeddedEventLoop) { self.loop = loop }

    func renewLease(host: String, ip: String, source: ResolutionSource, now: NIODeadline) -> ConnectionLease.Verdict {
        .renew(until: .distantFuture)
    }

    func connect(
        host: String, port: Int, tls: UpstreamTLS?, avoiding: Set<String>, on eventLoop: any EventLoop,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<ConnectedUpstream> {
        calls.append(Call(host: host, port: port))
        let channel = EmbeddedChannel(loop: loop)
        let address = try! SocketAddress(ipAddress: "192.0.2.1", port: port)
        let connected = channelInitializer(channel).flatMap { channel.connect(to: address) }
        channels.append(channel)
        return connected.map { ConnectedUpstream(channel: channel, address: address, source: .cache, resolveTime: .zero, connectTime: .zero, tls: nil) }
    }

    func recordFailure(_ failed: FailedAddress) {}

    /// Everything the proxy wrote to upstream `index`, as text.
    func written(_ index: Int = 0) throws -> String {
        var out = ""
        while let buffer = try channels[index].readOutbound(as: ByteBuffer.self) { out += String(buffer: buffer) }
        return out
    }

    /// Everything the proxy wrote to upstream `index`, as bytes.
    func writtenBytes(_ index: Int = 0) throws -> [UInt8] {
        var out: [UInt8] = []
        while let buffer = try channels[index].readOutbound(as: ByteBuffer.self) { out += buffer.readableBytesView }
        return out
    }
}

/// Answers every name with fixed addresses and remembers the names asked.
final class FixedAnswers: UpstreamResolver, @unchecked Sendable {
    var addresses: [String]
    private(set) var asked: [String] = []

    init(_ addresses: [String]) { self.addresses = addresses }

    func resolve(host: String, port: Int, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution> {
        asked.append(host)
        let resolved = addresses.compactMap { try? SocketAddress(ipAddress: $0, port: port) }
        return eventLoop.makeSucceededFuture(Resolution(addresses: resolved, source: .httpdns))
    }

    func fallback(after failed: Resolution, host: String, port: Int, reason: String, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution>? {
        nil
    }
}

/// A transparent connection on an EmbeddedChannel: its original destination is what the test
/// says, its upstreams are EmbeddedChannels, and time moves only with `advance`.
struct TransparentHandlerFixture {
    let loop = EmbeddedEventLoop()
    let client: EmbeddedChannel
    let upstreams: EmbeddedUpstreams
    let answers: FixedAnswers
    let stats = TransparentStats()
    let env: ProxyEnvironment
    let own = OwnConnections()
    let original: SocketAddress?
    let clientAddress: SocketAddress

    init(
        original: SocketAddress?, client clientAddress: SocketAddress, answers: [String] = ["192.0.2.1"],
        _ configure: (inout ProxyConfiguration) -> Void = { _ in }
    ) throws {
        var configuration = ProxyConfiguration.defaults
        configuration.transparentPeekTimeout = .milliseconds(300)
        configuration.transparentHelloTimeout = .seconds(5)
        configure(&configuration)
        self.original = original
        self.clientAddress = clientAddress
        client = EmbeddedChannel(loop: loop)
        upstreams = EmbeddedUpstreams(loop: loop)
        self.answers = FixedAnswers(answers)
        env = ProxyEnvironment(
            configuration: configuration, connector: upstreams, accessLog: try AccessLogWriter(target: .off),
            logger: Logger(label: "test"), eventLoops: [loop])
    }

    /// Adds the handler and connects the client, as the listener's accept does.
    func start() async throws {
        let original = self.original
        let shared = TransparentContext(
            env: env, resolver: answers, stats: stats, ownListeners: OwnListeners(), ownConnections: own,
            originalDestination: { channel in channel.eventLoop.makeSucceededFuture(original) })
        // An EmbeddedChannel's connect sets no addresses: the accepted socket's are set here.
        client.remoteAddress = clientAddress
        client.localAddress = try SocketAddress(ipAddress: "10.0.0.1", port: 3129)
        try client.pipeline.syncOperations.addHandler(TransparentConnectionHandler(shared: shared, admission: .admitted))
        try await client.connect(to: clientAddress).get()
    }

    func send(_ bytes: [UInt8]) throws { try client.writeInbound(ByteBuffer(bytes: bytes)) }

    func send(_ text: String) throws { try client.writeInbound(ByteBuffer(string: text)) }

    /// One of the proxy's own upstream connections, from `local` to `remote`, as the connector
    /// records it when its connect completes.
    func recordOwnConnection(from local: SocketAddress, to remote: SocketAddress) async throws {
        let channel = EmbeddedChannel(loop: loop)
        channel.localAddress = local
        channel.remoteAddress = remote
        try await channel.connect(to: remote).get()
        own.add(channel)
    }

    func advance(_ amount: TimeAmount) { loop.advanceTime(by: amount) }

    var snapshot: TransparentStats.Snapshot { stats.snapshot }
}
