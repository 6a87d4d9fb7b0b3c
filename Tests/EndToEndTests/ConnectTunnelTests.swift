import Foundation
import Testing
import TestSupport

/// CONNECT tunnels: allowlisted ports, byte transparency, half-close, IPv6 literals.
@Suite("CONNECT tunnels", .onBlockingThreads, .timeLimit(.minutes(1)))
struct ConnectTunnelTests {
    static func tunnelArguments(port: Int, allow: String = "127.0.0.0/8") -> [String] {
        ["--allow-destination", allow, "--connect-ports", String(port)]
    }

    @Test func curlTunnelsHTTPThroughConnect() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.tunnelArguments(port: origin.port))
        defer { proxy.stop() }
        let response = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-p"])
        #expect(response.exitCode == 0, "curl: \(response.stderr)")
        #expect(response.allHeads.hasPrefix("HTTP/1.1 200") || response.allHeads.hasPrefix("HTTP/1.0 200"),
                "CONNECT answer: \(response.allHeads)")
        #expect(response.status == 200, proxy.diagnostics)
        #expect(response.bodyText == "hello")
        let seen = try #require(origin.requests().last)
        #expect(seen.headers["via"].isEmpty, "a tunnel must not touch the tunnelled request")

        let entry = proxy.waitForAccessLog(where: { $0.string("type") == "tunnel" && $0.int("port") == origin.port })
        let tunnel = try #require(entry, "no tunnel access log line; \(proxy.diagnostics)")
        #expect(tunnel.string("host") == "127.0.0.1", "\(tunnel.jsonText)")
        #expect((tunnel.int("bytes_up") ?? 0) > 0 && (tunnel.int("bytes_down") ?? 0) > 0, "\(tunnel.jsonText)")
    }

    @Test func tunnelEchoesAndPropagatesHalfClose() async throws {
        let echo = try await TCPEchoServer.start()
        defer { echo.stop() }
        let proxy = try ProxyProcess.launch(Self.tunnelArguments(port: echo.port))
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        try client.send("CONNECT \(echo.authority) HTTP/1.1\r\nHost: \(echo.authority)\r\n\r\n")
        let head = try client.readHead()
        #expect(head.statusCode == 200, "\(head)\n\(proxy.diagnostics)")
        #expect(head.leftover.isEmpty, "bytes after the CONNECT answer: \(head.leftover)")

        try client.send("hello tunnel")
        #expect(String(decoding: try client.read(exactly: 12), as: UTF8.self) == "hello tunnel")

        // Half-close: the last bytes must still come back, then EOF from the echo server's side.
        try client.send("tail")
        client.shutdownWrite()
        #expect(await echo.waitForInputClosed(count: 1), "the echo server never saw EOF through the tunnel")
        #expect(String(decoding: try client.readToEOF(), as: UTF8.self) == "tail")
        #expect(echo.connectionCount == 1)
    }

    @Test(.enabled(if: Loopback.ipv6Available, "::1 cannot be bound on this host"))
    func connectToIPv6Literal() async throws {
        let echo = try await TCPEchoServer.start(host: "::1")
        defer { echo.stop() }
        let proxy = try ProxyProcess.launch(Self.tunnelArguments(port: echo.port, allow: "::1/128"))
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        try client.send("CONNECT [::1]:\(echo.port) HTTP/1.1\r\nHost: [::1]:\(echo.port)\r\n\r\n")
        let head = try client.readHead()
        #expect(head.statusCode == 200, "\(head)\n\(proxy.diagnostics)")
        try client.send("over-ipv6")
        #expect(String(decoding: try client.read(exactly: 9), as: UTF8.self) == "over-ipv6")
        #expect(echo.connectionCount == 1)
    }

    @Test func connectToPortOutsideAllowlistGets403() async throws {
        let echo = try await TCPEchoServer.start()
        defer { echo.stop() }
        // Default CONNECT allowlist is 443 only.
        let proxy = try ProxyProcess.launch(["--allow-destination", "127.0.0.0/8"])
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        try client.send("CONNECT \(echo.authority) HTTP/1.1\r\nHost: \(echo.authority)\r\n\r\n")
        let response = try client.readResponse(requestMethod: "CONNECT")
        #expect(response.statusCode == 403, proxy.diagnostics)
        #expect(response.bodyText.contains(String(echo.port)), "body should name the port: \(response.bodyText)")
        #expect(echo.connectionCount == 0)
    }
}
