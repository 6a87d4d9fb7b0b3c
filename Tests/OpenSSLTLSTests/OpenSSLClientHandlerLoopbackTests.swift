import Foundation
import NIOCore
import NIOPosix
import OpenSSLTLS
import Testing
import TestSupport

/// A CA, a trusting client context, and helpers to run an origin for one test.
struct Fixture {
    let ca: TestCA
    let caFile: String

    init() throws {
        self.ca = try TestCA()
        self.caFile = try self.ca.writeCAFile()
    }

    func clientContext(_ adjust: (inout TLSClientConfiguration) -> Void = { _ in }) throws -> TLSClientContext {
        var configuration = TLSClientConfiguration()
        configuration.caFile = self.caFile
        configuration.useSystemTrustStore = false
        adjust(&configuration)
        return try TLSClientContext(configuration: configuration)
    }

    func withOrigin<T>(
        _ leaf: TestLeafCertificate,
        host: String = "127.0.0.1",
        applicationProtocols: [String] = ["http/1.1"],
        maximumTLSVersion: TLSTestOrigin.TLSVersionLimit? = nil,
        _ body: (TLSTestOrigin) async throws -> T
    ) async throws -> T {
        let origin = try await TLSTestOrigin.start(
            certificatePEM: leaf.certificatePEM,
            privateKeyPEM: leaf.privateKeyPEM,
            host: host,
            applicationProtocols: applicationProtocols,
            maximumTLSVersion: maximumTLSVersion
        )
        do {
            let result = try await body(origin)
            try await origin.shutdown()
            return result
        } catch {
            try? await origin.shutdown()
            throw error
        }
    }

    /// Connects to the origin's IP as `serverName`, sends `GET path`, and closes.
    func get(
        _ path: String = "/hello",
        origin: TLSTestOrigin,
        context: TLSClientContext,
        serverName: String = "origin.test",
        spkiPins: [String] = []
    ) async throws -> ClientOutcome {
        let connection = try await TLSTestConnection.connect(
            host: origin.host, port: origin.port, context: context, serverName: serverName, spkiPins: spkiPins
        )
        let outcome = try await connection.request("GET", path, host: serverName)
        _ = try await connection.close()
        return outcome
    }
}

@Suite("OpenSSLHandler over loopback")
struct OpenSSLHandlerLoopbackTests {
    @Test("dialing the IP with the original name: 200, SNI and Host kept, ALPN http/1.1")
    func helloWithOriginalName() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf) { origin in
            let outcome = try await fixture.get(origin: origin, context: context)
            #expect(outcome.tlsError == nil)
            #expect(outcome.response?.status == 200)
            #expect(outcome.response?.bodyString == "hello")
            #expect(outcome.response?.header("X-Seen-Host") == "origin.test")
            #expect(outcome.negotiatedProtocol == "http/1.1")
            #expect(outcome.tlsVersion == "TLSv1.3")
            #expect(outcome.resumed == false)

            let seen = try await origin.waitForClosedConnections(1)
            #expect(seen.first?.serverName == "origin.test")
            #expect(seen.first?.clientHello?.offeredApplicationProtocols == ["http/1.1"])
            #expect(seen.first?.negotiatedProtocol == "http/1.1")
            #expect(seen.first?.requestHosts == ["origin.test"])
        }
    }

    @Test("the system trust store is used in addition to caFile")
    func systemStorePlusCAFile() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext { $0.useSystemTrustStore = true }
        try await fixture.withOrigin(leaf) { origin in
            let outcome = try await fixture.get(origin: origin, context: context)
            #expect(outcome.response?.status == 200)
        }
    }

    @Test("certificate for another name → certificateInvalid: hostname mismatch")
    func hostnameMismatch() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["other.test"])
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf) { origin in
            let outcome = try await fixture.get(origin: origin, context: context)
            let error = try #require(outcome.tlsError)
            #expect(error.kind == .certificateInvalid)
            #expect(error.reason == "hostname mismatch")
            #expect(error.host == "origin.test")
            #expect(error.description == "certificate for origin.test is not valid: hostname mismatch")
            #expect(error.shortDescription == "tls_certificate_invalid")
            #expect(outcome.response == nil)
            #expect(outcome.handshake == nil)
        }
    }

    @Test("certificate from an unrelated CA → certificateInvalid")
    func untrustedCA() async throws {
        let fixture = try Fixture()
        let stranger = try TestCA(commonName: "Unrelated Test CA")
        let leaf = try stranger.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf) { origin in
            let outcome = try await fixture.get(origin: origin, context: context)
            let error = try #require(outcome.tlsError)
            #expect(error.kind == .certificateInvalid)
            #expect(error.reason == "unable to get local issuer certificate")
            #expect(outcome.response == nil)
        }
    }

    @Test("expired leaf → certificateInvalid: certificate has expired")
    func expiredLeaf() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(
            dnsNames: ["origin.test"],
            notBefore: Date().addingTimeInterval(-10 * 86400),
            notAfter: Date().addingTimeInterval(-86400)
        )
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf) { origin in
            let outcome = try await fixture.get(origin: origin, context: context)
            let error = try #require(outcome.tlsError)
            #expect(error.kind == .certificateInvalid)
            #expect(error.reason.contains("expired"))
        }
    }

    @Test("matching SPKI pin → ok")
    func pinMatch() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext()
        let pins = ["AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", try leaf.spkiSHA256Base64()]
        try await fixture.withOrigin(leaf) { origin in
            let outcome = try await fixture.get(origin: origin, context: context, spkiPins: pins)
            #expect(outcome.tlsError == nil)
            #expect(outcome.response?.status == 200)
        }
    }

    @Test("no matching SPKI pin → certificateInvalid: pin mismatch, also on a resumable host")
    func pinMismatch() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let otherLeaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf) { origin in
            let outcome = try await fixture.get(origin: origin, context: context, spkiPins: [try otherLeaf.spkiSHA256Base64()])
            let error = try #require(outcome.tlsError)
            #expect(error.kind == .certificateInvalid)
            #expect(error.reason == "pin mismatch")
            #expect(outcome.response == nil)

            // A session from an unpinned connection must not let a pinned one skip the check.
            let unpinned = try await fixture.get(origin: origin, context: context)
            #expect(unpinned.response?.status == 200)
            #expect(context.cachedSessionCount == 1)
            let resumedPinned = try await fixture.get(origin: origin, context: context, spkiPins: [try otherLeaf.spkiSHA256Base64()])
            #expect(resumedPinned.tlsError?.reason == "pin mismatch")
            #expect(resumedPinned.response == nil)
        }
    }

    @Test("IP literal server name: verified against the IP SAN, no SNI sent")
    func ipLiteralServerName() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(ipAddresses: ["127.0.0.1"])
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf) { origin in
            let outcome = try await fixture.get(origin: origin, context: context, serverName: "127.0.0.1")
            #expect(outcome.tlsError == nil)
            #expect(outcome.response?.status == 200)
            #expect(outcome.response?.header("X-Seen-Host") == "127.0.0.1")
            let seen = try await origin.waitForClosedConnections(1)
            let hello = try #require(seen.first?.clientHello)
            #expect(hello.serverName == nil)
        }
    }

    @Test("IP literal server name against a certificate with only DNS names → certificateInvalid")
    func ipLiteralWithoutIPSAN() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["127.0.0.1", "origin.test"])
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf) { origin in
            let outcome = try await fixture.get(origin: origin, context: context, serverName: "127.0.0.1")
            let error = try #require(outcome.tlsError)
            #expect(error.kind == .certificateInvalid)
            #expect(error.reason == "IP address mismatch")
        }
    }

    @Test("server without ALPN → no negotiated protocol, still works")
    func noALPNOnServer() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf, applicationProtocols: []) { origin in
            let outcome = try await fixture.get(origin: origin, context: context)
            #expect(outcome.response?.status == 200)
            #expect(outcome.negotiatedProtocol == nil)
            #expect(outcome.handshake != nil)
        }
    }

    @Test(
        "second connection to the same host:port resumes the session",
        arguments: [TLSTestOrigin.TLSVersionLimit.tls13, .tls12]
    )
    func sessionResumption(version: TLSTestOrigin.TLSVersionLimit) async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf, maximumTLSVersion: version) { origin in
            let first = try await fixture.get(origin: origin, context: context)
            #expect(first.response?.status == 200)
            #expect(first.resumed == false)
            #expect(first.tlsVersion == (version == .tls13 ? "TLSv1.3" : "TLSv1.2"))
            #expect(context.cachedSessionCount == 1)

            let second = try await fixture.get(origin: origin, context: context)
            #expect(second.response?.status == 200)
            #expect(second.resumed == true)

            let seen = try await origin.waitForClosedConnections(2)
            #expect(seen.map { $0.clientHello?.offeredSessionResumption } == [false, true])
            #expect(seen.map(\.serverName) == ["origin.test", "origin.test"])
        }
    }

    @Test("a session stays resumable after its connection ended without close_notify")
    func resumptionAfterRaggedClose() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf) { origin in
            let connection = try await TLSTestConnection.connect(
                host: origin.host, port: origin.port, context: context, serverName: "origin.test"
            )
            let first = try await connection.request("GET", "/hello", host: "origin.test")
            #expect(first.response?.status == 200)
            // Close below the TLS handler: the TCP connection ends without our close_notify.
            let channel = connection.channel
            try await channel.eventLoop.submit {
                try channel.pipeline.syncOperations.context(handlerType: OpenSSLHandler.self).close(promise: nil)
            }.get()
            _ = try await connection.closed.get()
            // Let the pipeline tear down (handlerRemoved frees the SSL).
            try await channel.eventLoop.submit {}.get()
            try await channel.eventLoop.submit {}.get()
            let seen = try await origin.waitForClosedConnections(1)
            #expect(seen.first?.uncleanShutdown == true)

            let second = try await fixture.get(origin: origin, context: context)
            #expect(second.response?.status == 200)
            #expect(second.resumed == true)
        }
    }

    @Test("sessions are not shared between names or ports")
    func sessionsKeyedByHostAndPort() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test", "alias.test"])
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf) { origin in
            let first = try await fixture.get(origin: origin, context: context, serverName: "origin.test")
            #expect(first.resumed == false)
            let otherName = try await fixture.get(origin: origin, context: context, serverName: "alias.test")
            #expect(otherName.resumed == false)
            #expect(context.cachedSessionCount == 2)
            context.removeAllCachedSessions()
            let afterClear = try await fixture.get(origin: origin, context: context, serverName: "origin.test")
            #expect(afterClear.resumed == false)
        }
    }

    @Test("handshake timeout against a server that never answers → handshakeTimeout, channel closed")
    func handshakeTimeout() async throws {
        let fixture = try Fixture()
        let context = try fixture.clientContext { $0.handshakeTimeout = .milliseconds(200) }
        let server = try await SilentTCPServer.start()
        let connection = try await TLSTestConnection.connect(
            host: server.host, port: server.port, context: context, serverName: "origin.test"
        )
        let writePromise = connection.channel.eventLoop.makePromise(of: Void.self)
        connection.channel.writeAndFlush(ByteBuffer(string: "GET / HTTP/1.1\r\n\r\n"), promise: writePromise)
        let outcome = try await connection.closed.get()
        let error = try #require(outcome.tlsError)
        #expect(error.kind == .handshakeTimeout)
        #expect(error.shortDescription == "tls_handshake_timeout")
        #expect(error.description.contains("origin.test"))
        #expect(!connection.channel.isActive)
        // Fails with the TLSError if it was buffered before the timeout, else with ioOnClosedChannel
        // (the EmbeddedChannel test pins down the buffered case deterministically).
        await #expect(throws: (any Error).self) { try await writePromise.futureResult.get() }
        try await server.shutdown()
    }

    @Test("peer closing during the handshake → closedDuringHandshake")
    func closedDuringHandshake() async throws {
        let fixture = try Fixture()
        let context = try fixture.clientContext()
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(CloseOnFirstRead())
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let port = try #require(server.localAddress?.port)
        let connection = try await TLSTestConnection.connect(
            host: "127.0.0.1", port: port, context: context, serverName: "origin.test"
        )
        let outcome = try await connection.closed.get()
        #expect(outcome.tlsError?.kind == .closedDuringHandshake)
        try await server.close()
    }

    @Test("close() sends close_notify: the origin sees a clean TLS shutdown")
    func closeNotifyOnClose() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf) { origin in
            let connection = try await TLSTestConnection.connect(
                host: origin.host, port: origin.port, context: context, serverName: "origin.test"
            )
            let outcome = try await connection.request("GET", "/hello", host: "origin.test")
            #expect(outcome.response?.status == 200)
            #expect(connection.channel.isActive)
            _ = try await connection.close()

            let seen = try await origin.waitForClosedConnections(1)
            #expect(seen.first?.receivedCloseNotify == true)
            #expect(seen.first?.uncleanShutdown == false)
        }
    }

    @Test("origin's close_notify closes the channel cleanly, after the whole body")
    func peerCloseNotify() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf) { origin in
            let connection = try await TLSTestConnection.connect(
                host: origin.host, port: origin.port, context: context, serverName: "origin.test"
            )
            _ = try await connection.request("GET", "/bytes/100000", host: "origin.test", close: true)
            let closed = try await connection.closed.get()
            #expect(closed.response?.header("Connection") == "close")
            #expect(closed.response?.body.count == 100_000)
            #expect(closed.response.map { $0.body == TLSTestOrigin.patternBody(count: 100_000) } == true)
            #expect(closed.tlsError == nil)
            #expect(closed.otherErrors.isEmpty)
            #expect(!connection.channel.isActive)
        }
    }

    @Test("a 4 MiB response arrives intact")
    func largeResponse() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext()
        let size = 4 * 1024 * 1024
        try await fixture.withOrigin(leaf) { origin in
            let outcome = try await fixture.get("/bytes/\(size)", origin: origin, context: context)
            #expect(outcome.response?.status == 200)
            #expect(outcome.response?.body.count == size)
            #expect(outcome.response.map { $0.body == TLSTestOrigin.patternBody(count: size) } == true)
        }
    }

    @Test("a 4 MiB request body is encrypted intact (and echoed back)")
    func largeUpload() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext()
        let body = (0..<(4 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        try await fixture.withOrigin(leaf) { origin in
            let connection = try await TLSTestConnection.connect(
                host: origin.host, port: origin.port, context: context, serverName: "origin.test"
            )
            let outcome = try await connection.request("POST", "/echo", host: "origin.test", body: body)
            _ = try await connection.close()
            #expect(outcome.response?.status == 200)
            #expect(outcome.response?.body.count == body.count)
            #expect(outcome.response.map { $0.body == body } == true)
        }
    }

    @Test("auto-read off: the handler asks for handshake bytes itself; a 1 MiB body arrives on demand")
    func autoReadOff() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext { $0.handshakeTimeout = .seconds(5) }
        let size = 1024 * 1024
        try await fixture.withOrigin(leaf) { origin in
            let connection = try await TLSTestConnection.connect(
                host: origin.host, port: origin.port, context: context, serverName: "origin.test", autoRead: false
            )
            let outcome = try await connection.request("GET", "/bytes/\(size)", host: "origin.test")
            _ = try await connection.close()
            #expect(outcome.tlsError == nil)
            #expect(outcome.response.map { $0.body == TLSTestOrigin.patternBody(count: size) } == true)
        }
    }

    @Test("IPv6 loopback origin with an IP literal server name", .enabled { await ipv6LoopbackAvailable() })
    func ipv6Literal() async throws {
        let fixture = try Fixture()
        let leaf = try fixture.ca.issueLeaf(ipAddresses: ["::1"])
        let context = try fixture.clientContext()
        try await fixture.withOrigin(leaf, host: "::1") { origin in
            let outcome = try await fixture.get(origin: origin, context: context, serverName: "[::1]")
            #expect(outcome.tlsError == nil)
            #expect(outcome.response?.status == 200)
            let seen = try await origin.waitForClosedConnections(1)
            #expect(seen.first?.clientHello != nil)
            #expect(seen.first?.serverName == nil)
        }
    }
}

/// Closes the connection as soon as the ClientHello arrives.
private final class CloseOnFirstRead: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.close(promise: nil)
    }
}

private func ipv6LoopbackAvailable() async -> Bool {
    do {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "::1", port: 0)
            .get()
        try await channel.close().get()
        return true
    } catch {
        return false
    }
}
