import NIOCore
import ProxyConfig
import Testing

@testable import TransparentProxy

/// The transparent handler on an EmbeddedChannel: the original destination is injected, the
/// upstreams are EmbeddedChannels, and the peek's timers run on the loop's clock, moved by hand.
@Suite struct TransparentConnectionHandlerTests {
    static func address(_ ip: String, _ port: Int) -> SocketAddress { try! SocketAddress(ipAddress: ip, port: port) }

    let app = address("10.0.0.5", 40000)

    @Test func aSilentClientIsRelayedToItsOriginalDestinationAtThePeekTimeoutAndItsBytesFollow() async throws {
        let f = try TransparentHandlerFixture(original: Self.address("192.0.2.9", 22), client: app)
        try await f.start()
        f.advance(.milliseconds(299))
        #expect(f.upstreams.calls.isEmpty)
        f.advance(.milliseconds(1))
        #expect(f.upstreams.calls == [.init(host: "192.0.2.9", port: 22)])
        #expect(f.snapshot.peeks["silent"] == 1)
        #expect(f.answers.asked.isEmpty)
        // The tunnel is in place: bytes go through both ways, unchanged.
        try f.send("SSH-2.0-client\r\n")
        #expect(try f.upstreams.written() == "SSH-2.0-client\r\n")
        try f.upstreams.channels[0].writeInbound(ByteBuffer(string: "SSH-2.0-server\r\n"))
        #expect(try f.client.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) } == "SSH-2.0-server\r\n")
    }

    @Test func aClientHelloSentInPiecesGoesByItsNameAndReachesTheOriginWhole() async throws {
        let f = try TransparentHandlerFixture(original: Self.address("192.0.2.1", 443), client: app)
        try await f.start()
        let hello = HelloBytes.hello("origin.test")
        let cut = hello.count / 3
        try f.send(Array(hello[..<cut]))
        // Past the peek timeout: a hello that has begun waits for the hello timeout.
        f.advance(.seconds(1))
        #expect(f.upstreams.calls.isEmpty)
        #expect(f.client.isActive)
        try f.send(Array(hello[cut...]))
        #expect(f.answers.asked == ["origin.test"])
        #expect(f.upstreams.calls == [.init(host: "origin.test", port: 443)])
        #expect(try f.upstreams.writtenBytes() == hello)
        #expect(f.snapshot.peeks["tls_sni"] == 1)
        #expect(f.snapshot.hijacks == 0)
    }

    @Test func aHelloStillIncompleteAtTheHelloTimeoutIsRefusedWithFallbackRefuse() async throws {
        let f = try TransparentHandlerFixture(original: Self.address("192.0.2.1", 443), client: app) { $0.transparentFallback = .refuse }
        try await f.start()
        let hello = HelloBytes.hello("origin.test")
        try f.send(Array(hello[..<(hello.count / 2)]))
        f.advance(.milliseconds(4999))
        #expect(f.client.isActive)
        f.advance(.milliseconds(1))
        #expect(!f.client.isActive)
        #expect(f.upstreams.calls.isEmpty)
        #expect(f.snapshot.peeks["incomplete"] == 1)
        #expect(f.snapshot.refused == 1)
        #expect(f.env.recentErrors.report.errors.first?.reason.contains("--transparent-hello-timeout") == true)
    }

    @Test func anHTTPRequestGoesByItsHostToTheHTTPPipeline() async throws {
        let f = try TransparentHandlerFixture(original: Self.address("192.0.2.1", 80), client: app)
        try await f.start()
        try f.send("GET /page HTTP/1.1\r\nHost: origin.test\r\n\r\n")
        #expect(f.answers.asked.first == "origin.test")
        #expect(f.upstreams.calls.first == .init(host: "origin.test", port: 80))
        let written = try f.upstreams.written()
        #expect(written.hasPrefix("GET /page HTTP/1.1\r\n"), "\(written)")
        #expect(written.lowercased().contains("host: origin.test\r\n"), "\(written)")
        #expect(f.snapshot.peeks["http_host"] == 1)
    }

    @Test func aConnectionThatWasNotRedirectedIsClosed() async throws {
        let f = try TransparentHandlerFixture(original: nil, client: app)
        try await f.start()
        #expect(!f.client.isActive)
        #expect(f.snapshot.noOriginalDestination == 1)
        #expect(f.upstreams.calls.isEmpty)
    }

    @Test func theProxysOwnConnectionRedirectedBackIsRefusedAsALoop() async throws {
        let origin = Self.address("192.0.2.1", 443)
        let f = try TransparentHandlerFixture(original: origin, client: app)
        try await f.recordOwnConnection(from: app, to: origin)
        try await f.start()
        try f.send(HelloBytes.hello("origin.test"))
        #expect(!f.client.isActive)
        #expect(f.upstreams.calls.isEmpty)
        #expect(f.answers.asked.isEmpty)
        #expect(f.snapshot.refused == 1)
        #expect(f.env.recentErrors.report.errors.first?.reason.contains("redirected back") == true)
    }

    /// On an address the proxy shares with apps (a pod's), an app's connection may use the port
    /// number one of the proxy's own connections uses, to another destination: not a loop.
    @Test func anAppConnectionReusingAPortOfTheProxysToAnotherDestinationIsRelayed() async throws {
        let f = try TransparentHandlerFixture(original: Self.address("192.0.2.1", 443), client: app)
        try await f.recordOwnConnection(from: app, to: Self.address("198.51.100.7", 443))
        try await f.start()
        try f.send(HelloBytes.hello("origin.test"))
        #expect(f.client.isActive)
        #expect(f.upstreams.calls == [.init(host: "origin.test", port: 443)])
        #expect(f.snapshot.refused == 0)
    }
}
