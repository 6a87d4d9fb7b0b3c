import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import OpenSSLTLS
import Testing
import TestSupport

/// Answers every request read after the handshake with what the server end saw: the SNI, the
/// client certificate's name, the TLS version (as response fields), and echoes the request line.
private final class HandshakeReporter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var seen: TLSServerEvent?
    let events: NIOLockedValueBox<[String]>

    init(events: NIOLockedValueBox<[String]>) { self.events = events }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSServerEvent { self.seen = event }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.events.withLockedValue { $0.append("error: \((error as? TLSError)?.kind.description ?? "\(error)")") }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let request = self.unwrapInboundIn(data)
        guard case .handshakeCompleted(let serverName, let clientName, let version) = self.seen else { return }
        let line = String(buffer: request).split(separator: "\r\n").first.map(String.init) ?? ""
        let body = "\(line)"
        let response = "HTTP/1.1 200 OK\r\nX-SNI: \(serverName ?? "-")\r\nX-Client: \(clientName ?? "-")\r\nX-Version: \(version)\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: response)), promise: nil)
    }
}

/// A listener whose connections start with `OpenSSLHandler(server:)`.
private struct TLSServerUnderTest {
    let channel: any Channel
    var port: Int { self.channel.localAddress?.port ?? 0 }

    static func start(_ server: TLSServerContext) async throws -> TLSServerUnderTest {
        let events = NIOLockedValueBox<[String]>([])
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(OpenSSLHandler(server: server))
                    try channel.pipeline.syncOperations.addHandler(HandshakeReporter(events: events))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return TLSServerUnderTest(channel: channel, events: events)
    }

    let events: NIOLockedValueBox<[String]>
    var errors: [String] { self.events.withLockedValue { $0 } }
}

@Suite("OpenSSLHandler as a server (the TLS listener)")
struct OpenSSLServerHandlerTests {
    struct Identities {
        let fixture: Fixture
        let proxy: TestLeafCertificate
        let other: TestLeafCertificate

        init() throws {
            self.fixture = try Fixture()
            self.proxy = try fixture.ca.issueLeaf(dnsNames: ["proxy.test"])
            self.other = try fixture.ca.issueLeaf(dnsNames: ["*.corp.test"])
        }

        func identity(_ leaf: TestLeafCertificate) throws -> TLSServerConfiguration.Identity {
            let certificate = try TestCA.writeTemporaryFile(named: "cert.pem", contents: leaf.certificatePEM)
            let key = try TestCA.writeTemporaryFile(named: "key.pem", contents: leaf.privateKeyPEM)
            return .init(certificateFile: certificate, keyFile: key)
        }
    }

    private func get(_ server: TLSServerUnderTest, as serverName: String, context: TLSClientContext) async throws -> ClientOutcome {
        let connection = try await TLSTestConnection.connect(host: "127.0.0.1", port: server.port, context: context, serverName: serverName)
        let outcome = try await connection.request("GET", "http://origin.test/", host: "origin.test")
        _ = try await connection.close()
        return outcome
    }

    @Test("the certificate whose names match the SNI is presented; the first one otherwise; ALPN http/1.1")
    func certificateChosenBySNI() async throws {
        let identities = try Identities()
        let server = try TLSServerContext(
            configuration: .init(identities: [try identities.identity(identities.proxy), try identities.identity(identities.other)])
        )
        #expect(server.certificateNames == [["proxy.test"], ["*.corp.test"]])
        let listener = try await TLSServerUnderTest.start(server)
        let client = try identities.fixture.clientContext()

        // Our client verifies the certificate against the name it asked for: a handshake that
        // completes proves which certificate came.
        let first = try await get(listener, as: "proxy.test", context: client)
        #expect(first.tlsError == nil)
        #expect(first.response?.status == 200)
        #expect(first.response?.header("X-SNI") == "proxy.test")
        #expect(first.response?.bodyString == "GET http://origin.test/ HTTP/1.1")
        #expect(first.negotiatedProtocol == "http/1.1")

        let second = try await get(listener, as: "gateway.corp.test", context: client)
        #expect(second.tlsError == nil)
        #expect(second.response?.header("X-SNI") == "gateway.corp.test")

        // An unknown name gets the default (first) certificate, which the client then rejects.
        let unknown = try await get(listener, as: "elsewhere.test", context: client)
        #expect(unknown.tlsError?.kind == .certificateInvalid)
        #expect(unknown.response == nil)
        try await listener.channel.close()
    }

    @Test("a client CA requires a client certificate: a client without one fails the handshake")
    func clientCertificateRequired() async throws {
        let identities = try Identities()
        var configuration = TLSServerConfiguration(identities: [try identities.identity(identities.proxy)])
        configuration.clientCAFile = identities.fixture.caFile
        let listener = try await TLSServerUnderTest.start(try TLSServerContext(configuration: configuration))
        let outcome = try await get(listener, as: "proxy.test", context: try identities.fixture.clientContext())
        #expect(outcome.response == nil)
        // TLS 1.3: the client finishes first and learns of the refusal from the server's alert.
        #expect(outcome.tlsError != nil || !outcome.otherErrors.isEmpty)
        try await listener.channel.close()
    }

    @Test("bytes that are not TLS fail the handshake and close the connection; nothing reaches the handler above")
    func garbageIsRefused() async throws {
        let identities = try Identities()
        let server = try TLSServerContext(configuration: .init(identities: [try identities.identity(identities.proxy)]))
        let listener = try await TLSServerUnderTest.start(server)
        let closed = try await RawTCP.exchange(port: listener.port, send: Array("GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n".utf8))
        // An alert (content type 21) or nothing, then EOF; never an HTTP answer.
        #expect(closed.first == nil || closed.first == 21)
        #expect(!closed.starts(with: Array("HTTP/".utf8)))
        try await listener.channel.close()
        #expect(listener.errors.contains("error: handshake_failed"))
    }

    @Test("configuration errors name the file: unreadable, not PEM, a key that does not match")
    func configurationErrors() throws {
        let identities = try Identities()
        let good = try identities.identity(identities.proxy)
        let otherKey = try identities.identity(identities.other).keyFile
        let notPEM = try TestCA.writeTemporaryFile(named: "cert.pem", contents: "not a certificate\n")
        let cases: [(TLSServerConfiguration.Identity, String)] = [
            (.init(certificateFile: "/nonexistent/cert.pem", keyFile: good.keyFile), "cannot read certificate file /nonexistent/cert.pem"),
            (.init(certificateFile: notPEM, keyFile: good.keyFile), "cannot load certificate file \(notPEM)"),
            (.init(certificateFile: good.certificateFile, keyFile: otherKey), "cannot load key file \(otherKey): key values mismatch"),
        ]
        for (identity, expected) in cases {
            #expect {
                _ = try TLSServerContext(configuration: .init(identities: [identity]))
            } throws: { error in
                (error as? TLSError)?.kind == .configuration && "\(error)".contains(expected)
            }
        }
        #expect(throws: TLSError.self) { _ = try TLSServerContext(configuration: .init(identities: [])) }
    }
}

/// A plain TCP client: sends bytes, reads until EOF.
enum RawTCP {
    static func exchange(port: Int, send bytes: [UInt8]) async throws -> [UInt8] {
        let received = NIOLockedValueBox<[UInt8]>([])
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Collector(received: received))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
        try await channel.closeFuture.get()
        return received.withLockedValue { $0 }
    }

    private final class Collector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let received: NIOLockedValueBox<[UInt8]>
        init(received: NIOLockedValueBox<[UInt8]>) { self.received = received }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = Array(buffer: self.unwrapInboundIn(data))
            self.received.withLockedValue { $0 += bytes }
        }
    }
}
