import Foundation
import NIOHTTP1
import Testing
import TestSupport

/// Plain HTTP/1.1 forwarding (absolute-form requests) through the proxy, and its error answers.
///
/// Every test starts its own origin and proxy on port 0; `defer { x.stop() }` both cleans up when a
/// test fails and keeps each server alive until the end of the test (ARC may otherwise end a lifetime
/// at its last use).
@Suite("Forward proxy", .onBlockingThreads, .timeLimit(.minutes(2)))
struct ForwardProxyTests {
    /// Loopback is denied by the proxy's SSRF guard unless explicitly allowed.
    static let allowLoopback = ["--allow-destination", "127.0.0.0/8"]

    @Test func getIsForwardedWithViaAndLogged() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let response = try Curl.fetch(
            origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-H", "Proxy-Connection: keep-alive"])
        #expect(response.exitCode == 0, "curl: \(response.stderr)")
        #expect(response.status == 200, proxy.diagnostics)
        #expect(response.bodyText == "hello")

        let seen = try #require(origin.requests().last, "origin received no request")
        #expect(seen.uri == "/hello", "the proxy must send origin-form upstream")
        #expect(seen.headers["host"] == ["127.0.0.1:\(origin.port)"])
        #expect(seen.headers["via"].contains { $0.contains("httpdns-proxy") }, "Via: \(seen.headers["via"])")
        #expect(seen.headers["proxy-connection"].isEmpty)

        let entry = try #require(
            proxy.waitForAccessLog(where: { $0.string("type") == "request" && $0.string("path") == "/hello" }),
            "no access log line for the request; \(proxy.diagnostics)")
        #expect(entry.int("status") == 200, "\(entry.jsonText)")
        #expect(entry.string("method") == "GET", "\(entry.jsonText)")
        #expect(entry.string("host") == "127.0.0.1", "\(entry.jsonText)")
        #expect(entry.int("port") == origin.port, "\(entry.jsonText)")
        #expect(entry.string("ip") == "127.0.0.1", "\(entry.jsonText)")
        #expect(entry.string("error") == nil, "\(entry.jsonText)")
    }

    @Test func hopByHopHeadersAreStripped() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        try client.send(
            "GET \(origin.url("/hello")) HTTP/1.1\r\n"
                + "Host: \(origin.authority)\r\n"
                + "Connection: keep-alive, X-Secret-Hop\r\n"
                + "X-Secret-Hop: 1\r\n"
                + "Proxy-Connection: keep-alive\r\n"
                + "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n"
                + "Keep-Alive: timeout=5\r\n"
                + "X-Keep: yes\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.statusCode == 200, proxy.diagnostics)
        #expect(response.bodyText == "hello")

        let seen = try #require(origin.requests().last, "origin received no request")
        #expect(seen.headers["x-secret-hop"].isEmpty, "header named in Connection was forwarded")
        #expect(seen.headers["proxy-connection"].isEmpty)
        #expect(seen.headers["proxy-authorization"].isEmpty)
        #expect(seen.headers["keep-alive"].isEmpty)
        #expect(!seen.headers["connection"].joined(separator: ",").lowercased().contains("x-secret-hop"))
        #expect(seen.headers["x-keep"] == ["yes"])
    }

    @Test func chunkedUploadOf5MiB() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let body = Data(BytePattern.bytes(count: 5 << 20, offset: 13))
        let response = try Curl.fetch(
            origin.url("/digest"), proxy: proxy.proxyURL,
            // "Expect:" stops curl from sending Expect: 100-continue (and waiting 1 s for an answer /digest never gives).
            extra: ["-T", "-", "-H", "Transfer-Encoding: chunked", "-H", "Expect:"], stdin: body, timeout: .seconds(60))
        #expect(response.exitCode == 0, "curl: \(response.stderr)")
        #expect(response.status == 200, proxy.diagnostics)
        let digest = try #require(TestOrigin.parseDigest(response.body), "not a digest: \(response.bodyText.prefix(300))")
        #expect(digest.bytes == body.count)
        #expect(digest.fnv == TestOrigin.fnv(of: body))
    }

    @Test(arguments: [false, true])
    func download50MiB(chunked: Bool) async throws {
        let size = 50 << 20
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let path = "/bytes/\(size)" + (chunked ? "?chunked=1" : "")
        let response = try Curl.fetch(origin.url(path), proxy: proxy.proxyURL, timeout: .seconds(90))
        #expect(response.exitCode == 0, "curl: \(response.stderr)")
        #expect(response.status == 200, proxy.diagnostics)
        #expect(response.body.count == size)
        let mismatch = BytePattern.firstMismatch(in: response.body)
        #expect(mismatch == nil, "body differs from the origin's pattern at byte \(mismatch ?? -1)")
    }

    @Test func fortyKeepAliveRequestsShareOneUpstreamConnection() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let urls = Array(repeating: origin.url("/hello"), count: 40)
        let result = try Curl.run(["-sS", "-x", proxy.proxyURL, "-w", "=%{http_code}\n"] + urls, timeout: .seconds(60))
        #expect(result.exitCode == 0, "curl: \(result.stderr)")
        let lines = result.stdoutText.split(separator: "\n")
        #expect(lines.count == 40)
        #expect(lines.allSatisfy { $0 == "hello=200" }, "\(result.stdoutText.prefix(500))")
        #expect(origin.requests().count == 40)
        #expect(origin.connectionCount == 1, "the proxy should reuse one pooled upstream connection")

        let entries = proxy.waitForAccessLogs(count: 40, where: { $0.string("path") == "/hello" })
        let logged = try #require(entries, "expected 40 access log lines; \(proxy.diagnostics)")
        #expect(logged.filter { $0.bool("reused") == true }.count >= 39, "reused flags: \(logged.map { $0.bool("reused") })")
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        let requests = (1...3).map {
            "GET \(origin.url("/bytes/\($0)")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n"
        }
        try client.send(requests.joined())
        for size in 1...3 {
            let response = try client.readResponse()
            #expect(response.statusCode == 200, proxy.diagnostics)
            #expect(response.body == BytePattern.bytes(count: size), "response #\(size) out of order or wrong")
        }
    }

    @Test func closeDelimitedOriginResponseIsDeliveredCompletely() async throws {
        let size = 300_000
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        try client.send("GET \(origin.url("/close-delimited/\(size)")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.statusCode == 200, proxy.diagnostics)
        #expect(response.body.count == size)
        #expect(BytePattern.firstMismatch(in: response.body) == nil)
    }

    @Test func expect100ContinueUpload() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let body = Data(BytePattern.bytes(count: 64 << 10, offset: 3))
        // With a long --expect100-timeout, curl only sends the body early if a 100 Continue reaches it.
        let response = try Curl.fetch(
            origin.url("/expect"), proxy: proxy.proxyURL,
            extra: ["--data-binary", "@-", "-H", "Expect: 100-continue", "--expect100-timeout", "10"],
            stdin: body)
        #expect(response.exitCode == 0, "curl: \(response.stderr)")
        #expect(response.allHeads.contains("HTTP/1.1 100"), "no 100 Continue reached the client: \(response.allHeads)")
        #expect(response.status == 200, proxy.diagnostics)
        let digest = try #require(TestOrigin.parseDigest(response.body), "not a digest: \(response.bodyText.prefix(300))")
        #expect(digest.bytes == body.count)
        #expect(digest.fnv == TestOrigin.fnv(of: body))
    }

    @Test func upgradeSwitchesToRawEcho() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        try client.send(
            "GET \(origin.url("/upgrade")) HTTP/1.1\r\nHost: \(origin.authority)\r\n"
                + "Upgrade: echo\r\nConnection: upgrade\r\n\r\n")
        let head = try client.readHead()
        #expect(head.statusCode == 101, "\(head)\n\(proxy.diagnostics)")
        try client.send("ping-123")
        #expect(String(decoding: try client.read(exactly: 8), as: UTF8.self) == "ping-123")
    }

    // MARK: - Errors

    @Test func malformedRequestGets400() throws {
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        try client.send("GARBAGE\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.statusCode == 400, proxy.diagnostics)
        #expect(!response.body.isEmpty)
    }

    @Test func originFormRequestGets400() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        try client.send("GET /hello HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.statusCode == 400, proxy.diagnostics)
        #expect(origin.connectionCount == 0)
    }

    @Test func loopbackDestinationIsDeniedByDefault() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch()
        defer { proxy.stop() }
        let response = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL)
        #expect(response.status == 403, proxy.diagnostics)
        #expect(response.bodyText.lowercased().contains("loopback"), "body: \(response.bodyText)")
        #expect(origin.connectionCount == 0)
    }

    @Test func refusedUpstreamGets502Fast() throws {
        let port = try Loopback.unusedPort(host: Loopback.deadHost)
        // A refusal must be answered when it happens, not when the connect timeout expires: with a
        // timeout longer than curl waits, only the refusal itself can produce the 502.
        let proxy = try ProxyProcess.launch(Self.allowLoopback + ["--connect-timeout", "600s"])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://\(Loopback.deadHost):\(port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 502, proxy.diagnostics)
        #expect(response.bodyText.contains("connection refused"), "\(response.bodyText)")
        let entry = proxy.waitForAccessLog(where: { $0.int("status") == 502 })
        #expect(entry.map { !($0.string("error") ?? "").isEmpty } == true, "access log: \(proxy.stdoutText())")
    }

    /// The upstream timeout is a silence limit: an origin that never answers gets the client a 504,
    /// and one that stops halfway through a response is cut off (the client sees a truncated
    /// response, never a wrong one), with the reason in the access log. That neither happens
    /// before the timeout is tested with a virtual clock (ClientConnectionHandlerExchangeTests).
    @Test func upstreamSilenceIsCutOffAfterTheTimeout() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback + ["--upstream-timeout", "300ms"])
        defer { proxy.stop() }
        let unanswered = try Curl.fetch(origin.url("/slow"), proxy: proxy.proxyURL)
        #expect(unanswered.status == 504, proxy.diagnostics)
        #expect(unanswered.bodyText.contains("did not answer within 300"), "\(unanswered.bodyText)")
        // The origin's own thread records the request when it has read it, which on a loaded
        // machine can come after the proxy's 300 ms are up: wait for it rather than race it.
        #expect(try AccessControlTests.eventually { origin.requests().count == 1 }, "the request reached the origin once")

        let stalled = try Curl.fetch(origin.url("/stall/1000"), proxy: proxy.proxyURL)
        #expect(stalled.status == 200, proxy.diagnostics)
        #expect(stalled.exitCode == 18, "curl should report a partial transfer: \(stalled.stderr)")
        #expect(stalled.body.count == 1000)
        let entry = proxy.waitForAccessLog(where: { $0.int("status") == 200 })
        #expect(entry?.string("error")?.contains("stopped sending the response for 300") == true, "access log: \(proxy.stdoutText())")
    }
}
