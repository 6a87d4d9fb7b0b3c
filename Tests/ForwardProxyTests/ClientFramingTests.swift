import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import ProxyConfig
import Testing

@testable import ProxyKit
@testable import ProxyHTTP
@testable import ProxyUpstream
@testable import ForwardProxy

/// Request framing answered by the client handler itself, on an EmbeddedChannel (no upstream is
/// ever dialed: the destination would be denied, so any dial would show as a 403 instead).
@Suite struct ClientFramingTests {
    private func makeChannel() async throws -> EmbeddedChannel {
        let configuration = ProxyConfiguration.defaults
        let channel = EmbeddedChannel()
        let env = ProxyEnvironment(
            configuration: configuration,
            connector: UpstreamConnector(
                resolver: SystemResolver(),
                policy: configuration.destinationPolicy,
                connectTimeout: configuration.connectTimeout
            ),
            accessLog: try AccessLogWriter(target: .off),
            logger: Logger(label: "test"),
            eventLoops: [channel.embeddedEventLoop]
        )
        try ClientPipeline.configure(channel, env: env)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        return channel
    }

    private func send(_ channel: EmbeddedChannel, _ request: String) throws -> String {
        try channel.writeInbound(ByteBuffer(string: request))
        var out = ""
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { out += String(buffer: buffer) }
        return out
    }

    private static let statusLinePrefix = "HTTP/1.1 "

    /// (request head after the request line, expected status)
    static let cases: [(String, Int)] = [
        ("Transfer-Encoding: gzip, chunked\r\n", 501),
        ("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", 501),
        ("Transfer-Encoding: chunked, chunked\r\n", 400),
        ("Transfer-Encoding: chunked, identity\r\n", 400),
        ("Transfer-Encoding: xchunked\r\n", 400),
        ("Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", 400),
        ("Content-Length: 3\r\nContent-Length: 3\r\n", 400),
        ("Content-Length: +3\r\n", 400),
        ("Transfer-Encoding:\r\n", 400),
        (" Transfer-Encoding: chunked\r\n", 400),
        ("Transfer-Encoding : chunked\r\n", 400),
        ("X-A: 1\r\n folded\r\n", 400),
    ]

    @Test(arguments: cases)
    func ambiguousFramingIsAnsweredAndClosed(_ fields: String, _ status: Int) async throws {
        let channel = try await makeChannel()
        // A second, valid request follows in the same bytes: it must never be read as a request.
        let response = try send(
            channel,
            "POST http://10.9.9.9/x HTTP/1.1\r\nHost: 10.9.9.9\r\n\(fields)\r\n3\r\nabc\r\n0\r\n\r\n"
                + "GET http://10.9.9.9/second HTTP/1.1\r\nHost: 10.9.9.9\r\n\r\n"
        )
        #expect(response.hasPrefix("\(Self.statusLinePrefix)\(status) "), "\(fields.debugDescription): \(response.debugDescription)")
        #expect(response.components(separatedBy: "HTTP/1.1 ").count == 2, "exactly one response: \(response.debugDescription)")
        #expect(response.contains("X-Content-Type-Options: nosniff"))
        #expect(response.contains("Connection: close"))
        #expect(!channel.isActive, "the connection must close after a framing error")
    }

    @Test func transferEncodingOnHTTP10Is400() async throws {
        let channel = try await makeChannel()
        let response = try send(channel, "POST http://10.9.9.9/x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 400 "), "\(response)")
        #expect(response.contains("HTTP/1.0"))
        #expect(!channel.isActive)
    }

    @Test func longRequestTargetIs414() async throws {
        let channel = try await makeChannel()
        let path = String(repeating: "a", count: 9000)
        let response = try send(channel, "GET http://10.9.9.9/\(path) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 414 "), "\(response.prefix(100))")
        #expect(response.utf8.count < 1024, "the error body must not echo the target")
    }

    @Test func requestLineOverflowingTheHeadIs414() async throws {
        let channel = try await makeChannel()
        let path = String(repeating: "a", count: 90_000)
        let response = try send(channel, "GET http://10.9.9.9/\(path) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 414 "), "\(response.prefix(100))")
    }

    @Test func tooManyFieldsIs431() async throws {
        let channel = try await makeChannel()
        let fields = String(repeating: "X-A: b\r\n", count: MessageFraming.maxRequestFieldCount + 1)
        let response = try send(channel, "GET http://10.9.9.9/ HTTP/1.1\r\nHost: x\r\n\(fields)\r\n")
        #expect(response.hasPrefix("HTTP/1.1 431 "), "\(response.prefix(100))")
    }

    @Test func traceWithMaxForwardsZeroIsAnsweredByTheProxy() async throws {
        let channel = try await makeChannel()
        let response = try send(
            channel, "TRACE http://10.9.9.9/t HTTP/1.1\r\nHost: 10.9.9.9\r\nMax-Forwards: 0\r\nCookie: secret\r\nX-A: 1\r\n\r\n"
        )
        // 10.9.9.9 is denied by the default policy: a 200 proves nothing was dialed.
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(response)")
        #expect(response.contains("Content-Type: message/http"))
        #expect(response.contains("TRACE http://10.9.9.9/t HTTP/1.1\r\n"))
        #expect(response.contains("X-A: 1\r\n"))
        #expect(!response.contains("secret"))
    }

    @Test func optionsWithMaxForwardsZeroListsMethods() async throws {
        let channel = try await makeChannel()
        let response = try send(channel, "OPTIONS http://10.9.9.9/ HTTP/1.1\r\nHost: 10.9.9.9\r\nMax-Forwards: 0\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(response)")
        #expect(response.contains("Allow: "))
    }

    @Test func traceWithMaxForwardsOneIsForwarded() async throws {
        let channel = try await makeChannel()
        let response = try send(channel, "TRACE http://10.9.9.9/ HTTP/1.1\r\nHost: 10.9.9.9\r\nMax-Forwards: 1\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 403 "), "forwarded, so the destination policy answers: \(response)")
    }

    @Test func echoedTargetIsEscaped() async throws {
        let channel = try await makeChannel()
        let response = try send(channel, "GET http://10.9.9.9:99999'$/ HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 400 "), "\(response)")
        #expect(response.contains("invalid port '99999\\x27$'"), "\(response)")
    }
}
