import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import ProxyConfig
import Testing

@testable import ProxyKit
@testable import ProxyUpstream
@testable import ForwardProxy
@testable import ProxyApp

/// The client handler on an EmbeddedChannel: every path that answers without a live upstream.
@Suite struct ClientConnectionHandlerTests {
    private func makeChannel(_ configure: (inout ProxyConfiguration) -> Void = { _ in }) async throws -> EmbeddedChannel {
        var configuration = ProxyConfiguration.defaults
        configure(&configuration)
        let channel = EmbeddedChannel()
        let env = ProxyEnvironment(
            configuration: configuration,
            connector: UpstreamConnector(
                resolver: SystemResolver(),
                policy: configuration.destinationPolicy,
                connectTimeout: configuration.connectTimeout,
                tlsContext: try ProxyServer.makeTLSContext(configuration)
            ),
            accessLog: try AccessLogWriter(target: .off),
            logger: Logger(label: "test"),
            eventLoops: [channel.embeddedEventLoop]
        )
        try ClientPipeline.configure(channel, env: env)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        return channel
    }

    /// Feeds raw request bytes and returns everything the proxy wrote back.
    private func exchange(_ channel: EmbeddedChannel, _ request: String) throws -> String {
        try channel.writeInbound(ByteBuffer(string: request))
        var out = ""
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            out += String(buffer: buffer)
        }
        return out
    }

    @Test func garbageIs400WithReason() async throws {
        let channel = try await makeChannel()
        let response = try exchange(channel, "GARBAGE\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(response.contains("malformed request"))
        #expect(response.contains("Connection: close"))
        #expect(!channel.isActive)
    }

    @Test func originFormIs400() async throws {
        let channel = try await makeChannel()
        let response = try exchange(channel, "GET /hello HTTP/1.1\r\nHost: example.com\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 400 "))
        #expect(response.contains("forward proxy"))
    }

    @Test func connectToUnlistedPortIs403() async throws {
        let channel = try await makeChannel()
        let response = try exchange(channel, "CONNECT example.com:25 HTTP/1.1\r\nHost: example.com:25\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        #expect(response.contains("port 25 is not allowed"))
    }

    @Test func privateLiteralIsDeniedWithReason() async throws {
        let channel = try await makeChannel()
        let response = try exchange(channel, "GET http://10.1.2.3/ HTTP/1.1\r\nHost: 10.1.2.3\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        #expect(response.contains("10.1.2.3"))
        #expect(response.contains("private"))
    }

    @Test func mappedLoopbackLiteralIsDenied() async throws {
        let channel = try await makeChannel()
        let response = try exchange(channel, "GET http://[::ffff:127.0.0.1]:8080/ HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 403 "))
        #expect(response.contains("loopback"))
    }

    @Test func ownViaIsALoop() async throws {
        let channel = try await makeChannel { $0.viaPseudonym = "proxy-a" }
        let response = try exchange(channel, "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nVia: 1.1 proxy-a\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 508 "))
        #expect(response.contains("loop"))
    }

    /// https:// URIs are originated over TLS now: they go through the connector (and its SSRF guard)
    /// like http:// ones instead of being refused with 501.
    @Test func httpsURIGoesThroughTheDestinationPolicy() async throws {
        let channel = try await makeChannel()
        let response = try exchange(channel, "GET https://127.0.0.1:8443/ HTTP/1.1\r\nHost: 127.0.0.1:8443\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 403 "), "\(response)")
        #expect(response.contains("127.0.0.1"))
    }

    @Test func oversizedHeadersAre431() async throws {
        let channel = try await makeChannel()
        let big = String(repeating: "a", count: 100 * 1024)
        let response = try exchange(channel, "GET http://example.com/ HTTP/1.1\r\nX-Big: \(big)\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 431 "))
    }

    @Test func headerTimeoutAnswers408() async throws {
        let channel = try await makeChannel { $0.headerTimeout = .seconds(5) }
        #expect(try exchange(channel, "GET http://example.com/ HTTP/1.1\r\n").isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        var out = ""
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { out += String(buffer: buffer) }
        #expect(out.hasPrefix("HTTP/1.1 408 "))
        #expect(!channel.isActive)
    }

    @Test func headerTimeoutRunsFromTheFirstByteNotFromIdle() async throws {
        let channel = try await makeChannel {
            $0.clientIdleTimeout = .seconds(60)
            $0.headerTimeout = .seconds(5)
        }
        // Idle for 50 s (within the idle timeout), then a partial head.
        channel.embeddedEventLoop.advanceTime(by: .seconds(50))
        #expect(channel.isActive)
        #expect(try exchange(channel, "GET http://example.com/ HTTP/1.1\r\n").isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        #expect(channel.isActive, "the header timeout must not count the idle time before the first byte")
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        var out = ""
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { out += String(buffer: buffer) }
        #expect(out.hasPrefix("HTTP/1.1 408 "), "the 408 must come 5 s after the first byte, not at the idle deadline")
        #expect(!channel.isActive)
    }

    @Test func idleKeepAliveConnectionIsClosedSilently() async throws {
        let channel = try await makeChannel { $0.clientIdleTimeout = .seconds(10) }
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
    }

    @Test func quiesceClosesIdleConnection() async throws {
        let channel = try await makeChannel()
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(!channel.isActive)
    }
}
