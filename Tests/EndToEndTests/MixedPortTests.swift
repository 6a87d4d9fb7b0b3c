import Foundation
import Testing
import TestSupport

/// The proxy's own listener serves HTTP and SOCKS on one port (`--listen-socks`, on by default),
/// told apart by the first byte: real curl with an HTTP proxy URL, `socks5h://` and `socks4a://`
/// to the same port; refusals at accept answered in the client's protocol once its first byte
/// says which; a TLS ClientHello to the plain port answered with a 400 that says why.
@Suite("Mixed port", .onBlockingThreads, .timeLimit(.minutes(2)))
struct MixedPortTests {
    static func launch(_ service: FakeHTTPDNSService, _ extra: [String]) throws -> ProxyProcess {
        try HTTPDNSResolutionTests.launchOnService(service, extra)
    }

    @Test func oneListenerServesHTTPSocks5AndSocks4a() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let proxy = try Self.launch(service, ["--connect-ports", String(origin.port)])
        defer { proxy.stop() }

        for (proxyURL, method) in [
            ("http://127.0.0.1:\(proxy.port)", "GET"), ("socks5h://127.0.0.1:\(proxy.port)", "SOCKS5"),
            ("socks4a://127.0.0.1:\(proxy.port)", "SOCKS4"),
        ] {
            let response = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxyURL)
            #expect(response.status == 200, "\(proxyURL): \(response.stderr) \(proxy.diagnostics)")
            #expect(response.bodyText == "hello")
            let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == method }), proxy.diagnostics)
            #expect(entry.string("host") == "origin.test")
            #expect(entry.string("ip") == "127.0.0.1")
        }
        #expect(origin.requests().count == 3)
        #expect(origin.requests().allSatisfy { $0.headers["host"] == ["origin.test:\(origin.port)"] })
    }

    /// `--allow-client` refuses at accept; on the mixed port the answer waits for the first byte
    /// and speaks the client's protocol. A client that says nothing gets the HTTP refusal at the
    /// header timeout (the proxy's timer: the test waits only for the close).
    @Test func refusalsAreInTheClientsProtocol() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        let proxy = try Self.launch(service, ["--allow-client", "10.0.0.0/8", "--header-timeout", "300ms"])
        defer { proxy.stop() }
        for (label, hello, expected) in [
            ("SOCKS5", [0x05, 0x01, 0x00] as [UInt8], [0x05, 0xFF] as [UInt8]),
            ("SOCKS4", [0x04, 0x01, 0x01, 0xBB, 127, 0, 0, 1, 0], [0x00, 0x5B, 0, 0, 0, 0, 0, 0]),
        ] {
            let client = try RawClient(port: proxy.port)
            defer { client.close() }
            try client.send(hello)
            #expect(try client.readToEOF(timeout: .seconds(5)) == expected, "\(label)")
        }
        let http = try RawClient(port: proxy.port)
        defer { http.close() }
        try http.send("GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
        #expect(try http.readResponse().statusCode == 403)

        let silent = try RawClient(port: proxy.port)
        defer { silent.close() }
        let answer = String(decoding: try silent.readToEOF(timeout: .seconds(10)), as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 403 "), "\(answer)")
        #expect(try AccessControlTests.accessStats(proxy)["rejectedByACL"] as? Int == 4, "each refused once, at accept")
    }

    /// A full connection limit: SOCKS5 and HTTP clients past it each get their protocol's refusal.
    @Test func aFullLimitIsRefusedInTheClientsProtocol() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        let proxy = try Self.launch(service, AccessControlTests.allowLoopback + ["--max-connections", "1"])
        defer { proxy.stop() }
        let holder = try RawClient(port: proxy.port)
        defer { holder.close() }
        try holder.send([0x05, 0x01, 0x00])
        #expect(try holder.read(exactly: 2) == [0x05, 0x00], "the first connection is served")

        let socks = try RawClient(port: proxy.port)
        defer { socks.close() }
        try socks.send([0x05, 0x01, 0x00])
        #expect(try socks.readToEOF(timeout: .seconds(5)) == [0x05, 0xFF])
        let http = try RawClient(port: proxy.port)
        defer { http.close() }
        try http.send("GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
        let refused = try http.readResponse()
        #expect(refused.statusCode == 503 && refused.header("retry-after") != nil, "\(refused.statusCode)")
        #expect(try AccessControlTests.accessStats(proxy)["rejectedByLimits"] as? Int == 2)
    }

    /// A client that speaks TLS to the plain port (an https:// proxy URL) gets a 400 that says
    /// so, byte-level, and curl fails without anything dialed.
    @Test func aClientHelloToThePlainPortIsAClearRefusal() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let proxy = try Self.launch(service, ["--connect-ports", String(origin.port)])
        defer { proxy.stop() }

        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        try client.send([0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x03])
        let answer = String(decoding: try client.readToEOF(timeout: .seconds(5)), as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(answer)")
        #expect(answer.contains("a TLS ClientHello arrived on the proxy's plain port"), "\(answer)")
        #expect(answer.contains("Connection: close"), "\(answer)")

        let curl = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: "https://127.0.0.1:\(proxy.port)", extra: ["--proxy-insecure"])
        #expect(curl.exitCode != 0 && curl.status == 0, "\(curl.stderr)")
        #expect(origin.requests().isEmpty, "nothing was dialed")
        #expect(service.queryCount(for: "origin.test") == 0)
    }

    /// A first byte that is neither SOCKS nor TLS is HTTP's to judge (a SOCKS version 6 is not
    /// SOCKS here), and with `--listen-socks false` a SOCKS greeting is just bad HTTP.
    @Test func otherFirstBytesAndListenSocksFalseAreHTTP() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        for (flags, bytes) in [([] as [String], [0x06, 0x01, 0x00] as [UInt8]), (["--listen-socks", "false"], [0x05, 0x01, 0x00, 0x0D, 0x0A])] {
            let proxy = try Self.launch(service, flags)
            defer { proxy.stop() }
            let client = try RawClient(port: proxy.port)
            defer { client.close() }
            try client.send(bytes + Array("\r\n\r\n".utf8))
            let answer = String(decoding: try client.readToEOF(timeout: .seconds(5)), as: UTF8.self)
            #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(flags): \(answer)")
        }
    }
}
