import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import ProxyConfig
import Testing

@testable import ProxyKit
@testable import ProxyUpstream
@testable import ForwardProxy

/// Hands out EmbeddedChannels on the test's loop instead of dialing: the handler is driven with
/// EmbeddedChannels on both sides, and time moves only with `advanceTime`.
final class EmbeddedConnector: UpstreamConnecting, @unchecked Sendable {
    struct Call {
        var host: String
        var port: Int
        var avoiding: Set<String>
    }

    let loop: EmbeddedEventLoop
    private(set) var calls: [Call] = []
    private(set) var channels: [EmbeddedChannel] = []
    private(set) var blamed: [String] = []
    /// Addresses handed out in turn (127.0.0.1, 127.0.0.2, ...).
    private var next = 1
    /// A handler put first in every upstream pipeline (before the HTTP handlers), if set.
    var firstHandler: (() -> any ChannelHandler)?
    /// How many of the next connections the origin closes as soon as they are made (before the
    /// proxy takes them).
    var closeAtOnce = 0
    /// With `closeAtOnce`: the loop also runs the close through, so the channel's handlers are
    /// gone when the proxy looks for them.
    var tearDownOnClose = false

    init(loop: EmbeddedEventLoop) {
        self.loop = loop
    }

    /// The handler's tests are not about answers changing: every lease is renewed.
    func renewLease(host: String, ip: String, source: ResolutionSource, now: NIODeadline) -> ConnectionLease.Verdict {
        .renew(until: .distantFuture)
    }

    func connect(
        host: String, port: Int, tls: UpstreamTLS?, avoiding: Set<String>, on eventLoop: any EventLoop,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<ConnectedUpstream> {
        calls.append(Call(host: host, port: port, avoiding: avoiding))
        let channel = EmbeddedChannel(loop: loop)
        if let firstHandler { try! channel.pipeline.syncOperations.addHandler(firstHandler()) }
        // On the embedded loop each of these futures is complete when the call returns, so nothing is
        // waited on (this method cannot be async); a failure still traps, as `try! ... .wait()` did.
        channelInitializer(channel).whenFailure { preconditionFailure("channel initializer failed: \($0)") }
        let address = try! SocketAddress(ipAddress: "127.0.0.\(next)", port: port)
        next += 1
        channel.connect(to: address).whenFailure { preconditionFailure("connect failed: \($0)") }
        if closeAtOnce > 0 {
            closeAtOnce -= 1
            channel.close().whenFailure { preconditionFailure("close failed: \($0)") }
            if tearDownOnClose { loop.run() }
        }
        channels.append(channel)
        return loop.makeSucceededFuture(
            ConnectedUpstream(channel: channel, address: address, source: .cache, resolveTime: .zero, connectTime: .zero, tls: nil)
        )
    }

    func recordFailure(_ failed: FailedAddress) {
        blamed.append(failed.address.ipAddress ?? "?")
    }
}

/// Records every byte that passes through the head of a pipeline.
final class ByteTap: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private(set) var seen: [String] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        seen.append(String(buffer: unwrapInboundIn(data)))
        context.fireChannelRead(data)
    }
}

/// Counts the reads asked of a channel (at the head of its pipeline).
final class ReadCounter: ChannelOutboundHandler, @unchecked Sendable {
    typealias OutboundIn = Any
    private(set) var reads = 0

    func read(context: ChannelHandlerContext) {
        reads += 1
        context.read()
    }
}

@Suite struct ClientHandlerBothSidesTests {
    struct Fixture {
        let client: EmbeddedChannel
        let connector: EmbeddedConnector
        let clientReads = ReadCounter()

        init(_ configure: (inout ProxyConfiguration) -> Void = { _ in }) async throws {
            var configuration = ProxyConfiguration.defaults
            configure(&configuration)
            client = EmbeddedChannel()
            connector = EmbeddedConnector(loop: client.embeddedEventLoop)
            let env = ProxyEnvironment(
                configuration: configuration,
                connector: connector,
                accessLog: try AccessLogWriter(target: .off),
                logger: Logger(label: "test"),
                eventLoops: [client.embeddedEventLoop]
            )
            try client.pipeline.syncOperations.addHandler(clientReads)
            try ClientPipeline.configure(client, env: env)
            try await client.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        }

        func send(_ text: String) throws { try client.writeInbound(ByteBuffer(string: text)) }

        func clientOutput() throws -> String {
            var out = ""
            while let buffer = try client.readOutbound(as: ByteBuffer.self) { out += String(buffer: buffer) }
            return out
        }

        func upstreamOutput(_ index: Int) throws -> String {
            var out = ""
            while let buffer = try connector.channels[index].readOutbound(as: ByteBuffer.self) { out += String(buffer: buffer) }
            return out
        }

        func respond(_ index: Int, _ text: String) throws {
            try connector.channels[index].writeInbound(ByteBuffer(string: text))
        }
    }

    static let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    static let okToClient = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nVia: 1.1 httpdns-proxy\r\n\r\nok"

    @Test func aGetIsForwardedAndAnsweredByteForByte() async throws {
        let f = try await Fixture()
        try f.send("GET http://a.test/p?q=1 HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\n\r\n")
        #expect(f.connector.calls.map(\.host) == ["a.test"])
        #expect(try f.upstreamOutput(0) == "GET /p?q=1 HTTP/1.1\r\nAccept: */*\r\nHost: a.test\r\nVia: 1.1 httpdns-proxy\r\n\r\n")
        try f.respond(0, Self.ok)
        #expect(try f.clientOutput() == Self.okToClient)
        #expect(f.client.isActive)
    }

    @Test func pipelinedRequestsAreServedInOrder() async throws {
        let f = try await Fixture()
        try f.send("GET http://a.test/1 HTTP/1.1\r\nHost: a.test\r\n\r\nGET http://a.test/2 HTTP/1.1\r\nHost: a.test\r\n\r\n")
        #expect(try f.upstreamOutput(0) == "GET /1 HTTP/1.1\r\nHost: a.test\r\nVia: 1.1 httpdns-proxy\r\n\r\n")
        #expect(f.connector.calls.count == 1, "the second request waits for the first")
        try f.respond(0, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1")
        // The first connection returns to the pool only after its read: the second request,
        // started inside that read, gets a connection of its own.
        #expect(f.connector.calls.count == 2)
        #expect(try f.upstreamOutput(1) == "GET /2 HTTP/1.1\r\nHost: a.test\r\nVia: 1.1 httpdns-proxy\r\n\r\n")
        try f.respond(1, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2")
        let out = try f.clientOutput()
        #expect(out == "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nVia: 1.1 httpdns-proxy\r\n\r\n1HTTP/1.1 200 OK\r\nContent-Length: 1\r\nVia: 1.1 httpdns-proxy\r\n\r\n2")
    }

    @Test func aBodilessGetIsRetriedOnAnotherAddressAndTheFirstIsBlamed() async throws {
        let f = try await Fixture()
        try f.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        _ = try f.upstreamOutput(0)
        f.connector.channels[0].pipeline.fireChannelInactive()
        #expect(f.connector.calls.count == 2)
        #expect(f.connector.calls[1].avoiding == ["127.0.0.1"])
        #expect(f.connector.blamed == ["127.0.0.1"])
        #expect(try f.upstreamOutput(1).hasPrefix("GET / HTTP/1.1\r\n"))
        try f.respond(1, Self.ok)
        #expect(try f.clientOutput() == Self.okToClient)
    }

    @Test func aConnectionTheOriginClosedBeforeItWasTakenIsRetriedNotWaitedOn() async throws {
        // The close happened while the connection belonged to nobody: before, the exchange was
        // never told and waited for the upstream timeout.
        let f = try await Fixture()
        f.connector.closeAtOnce = 1
        try f.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        #expect(f.connector.calls.count == 2)
        #expect(f.connector.calls[1].avoiding == ["127.0.0.1"])
        #expect(f.connector.blamed == ["127.0.0.1"])
        #expect(try f.upstreamOutput(1) == "GET / HTTP/1.1\r\nHost: a.test\r\nVia: 1.1 httpdns-proxy\r\n\r\n")
        try f.respond(1, Self.ok)
        #expect(try f.clientOutput() == Self.okToClient)
    }

    @Test func aConnectionTornDownBeforeItWasTakenIsRetriedToo() async throws {
        // The close ran through before the proxy looked: the connection's handler is gone.
        let f = try await Fixture()
        f.connector.closeAtOnce = 1
        f.connector.tearDownOnClose = true
        try f.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        #expect(f.connector.calls.count == 2)
        #expect(f.connector.calls[1].avoiding == ["127.0.0.1"])
        #expect(try f.upstreamOutput(1) == "GET / HTTP/1.1\r\nHost: a.test\r\nVia: 1.1 httpdns-proxy\r\n\r\n")
        try f.respond(1, Self.ok)
        #expect(try f.clientOutput() == Self.okToClient)
    }

    @Test func aPostOnAConnectionClosedBeforeItWasTakenIsRetriedWithItsBody() async throws {
        // Nothing was sent on the closed connection, so even a POST may go again.
        let f = try await Fixture()
        f.connector.closeAtOnce = 1
        try f.send("POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 2\r\n\r\nhi")
        #expect(f.connector.calls.count == 2)
        #expect(try f.upstreamOutput(1) == "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 2\r\nVia: 1.1 httpdns-proxy\r\n\r\nhi")
        try f.respond(1, Self.ok)
        #expect(try f.clientOutput() == Self.okToClient)
    }

    @Test func twoConnectionsClosedBeforeUseGiveA502AndBlameBothAddresses() async throws {
        let f = try await Fixture()
        f.connector.closeAtOnce = 2
        try f.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        #expect(f.connector.calls.count == 2)
        #expect(f.connector.blamed == ["127.0.0.1", "127.0.0.2"])
        let out = try f.clientOutput()
        #expect(out.hasPrefix("HTTP/1.1 502 "), "\(out)")
        #expect(out.contains("closed the connection as soon as it was made"), "\(out)")
    }

    @Test func aPostIsNotRetried() async throws {
        let f = try await Fixture()
        try f.send("POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 2\r\n\r\nhi")
        _ = try f.upstreamOutput(0)
        f.connector.channels[0].pipeline.fireChannelInactive()
        #expect(f.connector.calls.count == 1)
        let out = try f.clientOutput()
        #expect(out.hasPrefix("HTTP/1.1 502 "), "\(out)")
        #expect(!f.client.isActive)
    }

    @Test func anEarlyResponseDuringAnUploadClosesBothSides() async throws {
        let f = try await Fixture()
        try f.send("POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 10\r\n\r\n12345")
        #expect(try f.upstreamOutput(0).hasSuffix("\r\n\r\n12345"))
        try f.respond(0, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n")
        f.client.embeddedEventLoop.run()
        #expect(try f.clientOutput().hasPrefix("HTTP/1.1 413 "))
        #expect(!f.client.isActive)
        #expect(!f.connector.channels[0].isActive, "the upstream is closed, not pooled")
    }

    @Test func hundredContinueComesBeforeTheBody() async throws {
        let f = try await Fixture()
        try f.send("POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
        #expect(try f.upstreamOutput(0).contains("Expect: 100-continue\r\n"))
        try f.respond(0, "HTTP/1.1 100 Continue\r\n\r\n")
        #expect(try f.clientOutput() == "HTTP/1.1 100 Continue\r\n\r\n")
        try f.send("abc")
        #expect(try f.upstreamOutput(0) == "abc")
        try f.respond(0, Self.ok)
        #expect(try f.clientOutput() == Self.okToClient)
    }

    /// The bytes that arrive with an upgrade go on both ways; the upstream's are handed to the
    /// glue, not fired again from the head of its pipeline (where a TLS handler would take them
    /// for ciphertext).
    @Test func anUpgradeCarriesTheBytesThatCameWithItBothWays() async throws {
        let f = try await Fixture()
        let tap = ByteTap()
        f.connector.firstHandler = { tap }
        try f.send("GET http://a.test/ws HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nHELLO")
        #expect(try f.upstreamOutput(0) == "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nHost: a.test\r\nConnection: upgrade\r\n\(MessageRewriterViaLine)\r\n")
        try f.respond(0, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nWORLD")
        f.client.embeddedEventLoop.run()
        let toClient = try f.clientOutput()
        #expect(toClient.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"), "\(toClient)")
        #expect(toClient.hasSuffix("\r\n\r\nWORLD"), "\(toClient.debugDescription)")
        #expect(try f.upstreamOutput(0) == "HELLO")
        #expect(tap.seen.joined().components(separatedBy: "WORLD").count == 2, "WORLD passed the pipeline head once: \(tap.seen)")
        try f.send("more")
        #expect(try f.upstreamOutput(0) == "more")
        try f.respond(0, "back")
        #expect(try f.clientOutput() == "back")
    }

    @Test func readsWaitWhileTheUpstreamCannotTakeMore() async throws {
        let f = try await Fixture()
        try f.send("POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 100\r\n\r\nabc")
        let upstream = f.connector.channels[0]
        upstream.isWritable = false
        upstream.pipeline.fireChannelWritabilityChanged()
        let before = f.clientReads.reads
        f.client.read()
        #expect(f.clientReads.reads == before, "no read while the upstream is not writable")
        upstream.isWritable = true
        upstream.pipeline.fireChannelWritabilityChanged()
        #expect(f.clientReads.reads == before + 1, "the held read goes ahead")
    }

    @Test func upstreamReadsWaitWhileTheClientCannotTakeMore() async throws {
        let f = try await Fixture()
        let counter = ReadCounter()
        f.connector.firstHandler = { counter }
        try f.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        f.client.isWritable = false
        f.client.pipeline.fireChannelWritabilityChanged()
        let before = counter.reads
        f.connector.channels[0].read()
        #expect(counter.reads == before)
        f.client.isWritable = true
        f.client.pipeline.fireChannelWritabilityChanged()
        #expect(counter.reads == before + 1)
    }

    @Test func upstreamSilenceIs504AfterTheTimeoutAndNotBefore() async throws {
        let f = try await Fixture { $0.upstreamTimeout = .seconds(5) }
        try f.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        f.client.embeddedEventLoop.advanceTime(by: .milliseconds(4_900))
        #expect(try f.clientOutput().isEmpty)
        f.client.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        #expect(try f.clientOutput().hasPrefix("HTTP/1.1 504 "))
        #expect(!f.connector.channels[0].isActive)
    }

    @Test func aTricklingResponseIsNotCutOff() async throws {
        let f = try await Fixture { $0.upstreamTimeout = .seconds(5) }
        try f.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        try f.respond(0, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n")
        for byte in ["a", "b", "c"] {
            f.client.embeddedEventLoop.advanceTime(by: .seconds(4))
            try f.respond(0, byte)
        }
        #expect(try f.clientOutput().hasSuffix("\r\n\r\nabc"))
        #expect(f.client.isActive)
    }

    @Test func theIdleTimeoutClosesAKeptAliveConnection() async throws {
        let f = try await Fixture { $0.clientIdleTimeout = .seconds(10) }
        try f.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        try f.respond(0, Self.ok)
        _ = try f.clientOutput()
        f.client.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(f.client.isActive)
        f.client.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!f.client.isActive)
    }
}

private let MessageRewriterViaLine = "Via: 1.1 httpdns-proxy\r\n"
