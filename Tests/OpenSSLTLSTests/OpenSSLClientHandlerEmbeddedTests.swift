import NIOCore
import NIOEmbedded
import NIOSSL
import OpenSSLTLS
import Testing
import TestSupport

/// Records what reaches the top of the client pipeline.
private final class EventRecorder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    var events: [TLSClientEvent] = []
    var errors: [any Error] = []
    var inactive = false

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSClientEvent { self.events.append(event) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.errors.append(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.inactive = true
        context.fireChannelInactive()
    }
}

/// How a write's future completed, recorded when it does (`assumeIsolated` is not available in the
/// async tests themselves).
private final class WriteOutcome {
    var result: Result<Void, any Error>?

    init(_ future: EventLoopFuture<Void>) {
        future.assumeIsolated().whenComplete { self.result = $0 }
    }
}

/// An OpenSSL client and a swift-nio-ssl server on two EmbeddedChannels, bytes moved by hand.
private struct EmbeddedPair {
    let client: EmbeddedChannel
    let server: EmbeddedChannel
    let recorder: EventRecorder

    init(handshakeTimeout: Duration = .seconds(10)) throws {
        let ca = try TestCA()
        let leaf = try ca.issueLeaf(dnsNames: ["origin.test"])
        var configuration = TLSClientConfiguration()
        configuration.caFile = try ca.writeCAFile()
        configuration.useSystemTrustStore = false
        configuration.handshakeTimeout = handshakeTimeout
        let context = try TLSClientContext(configuration: configuration)

        self.recorder = EventRecorder()
        self.client = EmbeddedChannel()
        try self.client.pipeline.syncOperations.addHandler(
            OpenSSLHandler(context: context, serverName: "origin.test", port: 443)
        )
        try self.client.pipeline.syncOperations.addHandler(self.recorder)

        var serverConfiguration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(leaf.certificatePEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(leaf.privateKeyPEM.utf8), format: .pem))
        )
        serverConfiguration.applicationProtocols = ["http/1.1"]
        self.server = EmbeddedChannel(handler: NIOSSLServerHandler(context: try NIOSSLContext(configuration: serverConfiguration)))
    }

    func connect() async throws {
        try await self.server.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        try await self.client.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).get()
    }

    /// Moves ciphertext both ways until neither side has anything to send.
    func pump() throws {
        var moved = true
        while moved {
            moved = false
            while let bytes = try self.client.readOutbound(as: ByteBuffer.self) {
                try self.server.writeInbound(bytes)
                moved = true
            }
            while let bytes = try self.server.readOutbound(as: ByteBuffer.self) {
                try self.client.writeInbound(bytes)
                moved = true
            }
        }
    }

    func serverPlaintext() throws -> String {
        var text = ""
        while let buffer = try self.server.readInbound(as: ByteBuffer.self) {
            text += String(buffer: buffer)
        }
        return text
    }

    func clientPlaintext() throws -> String {
        var text = ""
        while let buffer = try self.client.readInbound(as: ByteBuffer.self) {
            text += String(buffer: buffer)
        }
        return text
    }
}

@Suite("OpenSSLHandler on EmbeddedChannel")
struct OpenSSLHandlerEmbeddedTests {
    @Test("writes before the handshake are buffered, then encrypted once it completes")
    func buffersWritesUntilHandshake() async throws {
        let pair = try EmbeddedPair()
        try await pair.connect()

        // channelActive started the handshake: exactly one ClientHello went out.
        let clientHello = try #require(try pair.client.readOutbound(as: ByteBuffer.self))
        #expect(clientHello.getInteger(at: 0, as: UInt8.self) == 22)  // handshake record

        let written = WriteOutcome(pair.client.writeAndFlush(ByteBuffer(string: "early data")))
        #expect(try pair.client.readOutbound(as: ByteBuffer.self) == nil)
        #expect(written.result == nil)

        try pair.server.writeInbound(clientHello)
        try pair.pump()

        guard case .success = written.result else {
            Issue.record("buffered write not completed: \(String(describing: written.result))")
            return
        }
        #expect(try pair.serverPlaintext() == "early data")
        #expect(pair.recorder.events == [.handshakeCompleted(negotiatedProtocol: "http/1.1", resumed: false, tlsVersion: "TLSv1.3")])

        // And back: server plaintext is decrypted for the client pipeline.
        pair.server.writeAndFlush(ByteBuffer(string: "pong"), promise: nil)
        try pair.pump()
        #expect(try pair.clientPlaintext() == "pong")
        #expect(pair.recorder.errors.isEmpty)
    }

    @Test("writes without flush stay buffered after the handshake until flush")
    func writeWithoutFlush() async throws {
        let pair = try EmbeddedPair()
        try await pair.connect()
        try pair.pump()
        #expect(pair.recorder.events.count == 1)

        pair.client.write(ByteBuffer(string: "a"), promise: nil)
        #expect(try pair.client.readOutbound(as: ByteBuffer.self) == nil)
        pair.client.write(ByteBuffer(string: "b"), promise: nil)
        pair.client.flush()
        try pair.pump()
        #expect(try pair.serverPlaintext() == "ab")
    }

    @Test("handshake timeout on the event loop clock: error fired, channel closed, writes failed")
    func handshakeTimeoutEmbedded() async throws {
        let pair = try EmbeddedPair(handshakeTimeout: .seconds(3))
        try await pair.connect()
        _ = try pair.client.readOutbound(as: ByteBuffer.self)  // ClientHello; the server never answers

        let written = WriteOutcome(pair.client.writeAndFlush(ByteBuffer(string: "never sent")))

        pair.client.embeddedEventLoop.advanceTime(by: .milliseconds(2999))
        #expect(pair.client.isActive)
        #expect(pair.recorder.errors.isEmpty)

        pair.client.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!pair.client.isActive)
        #expect(pair.recorder.inactive)
        let error = try #require(pair.recorder.errors.first as? TLSError)
        #expect(error.kind == .handshakeTimeout)
        #expect(error.host == "origin.test")
        guard case .failure(let writeError) = written.result else {
            Issue.record("write should have failed, got \(String(describing: written.result))")
            return
        }
        #expect((writeError as? TLSError)?.kind == .handshakeTimeout)
    }

    @Test("no timeout fires once the handshake has completed")
    func timeoutCancelledAfterHandshake() async throws {
        let pair = try EmbeddedPair(handshakeTimeout: .seconds(1))
        try await pair.connect()
        try pair.pump()
        pair.client.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(pair.client.isActive)
        #expect(pair.recorder.errors.isEmpty)
    }

    @Test("close after the handshake sends close_notify first")
    func closeSendsCloseNotify() async throws {
        let pair = try EmbeddedPair()
        try await pair.connect()
        try pair.pump()

        try await pair.client.close().get()
        // A TLS 1.3 alert record (encrypted, content type 23 on the wire) was written before closing.
        let record = try #require(try pair.client.readOutbound(as: ByteBuffer.self))
        #expect(record.readableBytes > 5)
        #expect(!pair.client.isActive)

        // The server decrypts it as close_notify, answers with its own and closes (a ragged EOF
        // would have left it open, waiting for channelInactive).
        #expect(pair.server.isActive)
        try pair.server.writeInbound(record)
        pair.server.embeddedEventLoop.run()
        #expect(!pair.server.isActive)
    }

    @Test("close during the handshake fails buffered writes and sends nothing more")
    func closeDuringHandshake() async throws {
        let pair = try EmbeddedPair()
        try await pair.connect()
        _ = try pair.client.readOutbound(as: ByteBuffer.self)

        let written = WriteOutcome(pair.client.writeAndFlush(ByteBuffer(string: "x")))
        try await pair.client.close().get()
        #expect(try pair.client.readOutbound(as: ByteBuffer.self) == nil)
        guard case .failure = written.result else {
            Issue.record("write should have failed")
            return
        }
        let late = WriteOutcome(pair.client.writeAndFlush(ByteBuffer(string: "late")))
        guard case .failure = late.result else {
            Issue.record("write after close should fail")
            return
        }
    }

    @Test("handler added to an already active channel starts the handshake at once")
    func addedToActiveChannel() async throws {
        let ca = try TestCA()
        var configuration = TLSClientConfiguration()
        configuration.caFile = try ca.writeCAFile()
        let context = try TLSClientContext(configuration: configuration)
        let channel = EmbeddedChannel()
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).get()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        try channel.pipeline.syncOperations.addHandler(
            OpenSSLHandler(context: context, serverName: "origin.test", port: 443)
        )
        let hello = try #require(try channel.readOutbound(as: ByteBuffer.self))
        let summary = try #require(try ClientHelloSummary.parse(Array(hello.readableBytesView)))
        #expect(summary.serverName == "origin.test")
        #expect(summary.offeredApplicationProtocols == ["http/1.1"])
        _ = try? channel.finish()
    }
}
