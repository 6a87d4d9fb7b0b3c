import Foundation
import Testing
import TestSupport

/// `--socks-listen` through the real binary and a real client (curl): SOCKS5 with the name handed
/// to the proxy (`socks5h://`) and SOCKS4a reach the address the fake HTTPDNS service gives for a
/// name no other resolver knows (`--system-fallback false`), logged as tunnels; credentials,
/// connect-ports and unknown names are refused in SOCKS's own replies.
@Suite("SOCKS listener", .timeLimit(.minutes(2)))
struct SOCKSListenerTests {
    static func launch(_ service: FakeHTTPDNSService, _ extra: [String]) throws -> (ProxyProcess, Int) {
        let proxy = try HTTPDNSResolutionTests.launchOnService(service, ["--socks-listen", "127.0.0.1:0"] + extra)
        guard let line = proxy.waitForLog(where: { $0["message"] as? String == "socks listening" }),
              let address = line["address"] as? String, let port = ProxyProcess.port(ofAddress: address)
        else {
            proxy.stop()
            throw ProxyProcess.Failure(description: "no 'socks listening' line: \(proxy.diagnostics)")
        }
        return (proxy, port)
    }

    @Test func socks5hAndSocks4aReachTheHTTPDNSAddress() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let (proxy, port) = try Self.launch(service, ["--connect-ports", String(origin.port)])
        defer { proxy.stop() }

        for (scheme, method) in [("socks5h", "SOCKS5"), ("socks4a", "SOCKS4")] {
            let response = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: "\(scheme)://127.0.0.1:\(port)")
            #expect(response.status == 200, "\(scheme): \(response.stderr) \(proxy.diagnostics)")
            #expect(response.bodyText == "hello")
            let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == method }), proxy.diagnostics)
            #expect(entry.string("host") == "origin.test")
            #expect(entry.string("ip") == "127.0.0.1")
            #expect(entry.int("status") == 200)
        }
        #expect(origin.requests().last?.headers["host"] == ["origin.test:\(origin.port)"])
        #expect(service.queryCount(for: "origin.test") == 1, "the second tunnel is answered from the cache")
    }

    @Test func credentialsAreRequiredWithProxyAuthAndSocks4IsRefused() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let (proxy, port) = try Self.launch(service, ["--connect-ports", String(origin.port), "--proxy-auth", "alice:s3cret-pw"])
        defer { proxy.stop() }

        let good = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: "socks5h://alice:s3cret-pw@127.0.0.1:\(port)")
        #expect(good.status == 200, "\(good.stderr) \(proxy.diagnostics)")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == "SOCKS5" }), proxy.diagnostics)
        #expect(entry.string("user") == "alice")
        for refused in ["socks5h://alice:wrong@127.0.0.1:\(port)", "socks5h://127.0.0.1:\(port)", "socks4a://alice@127.0.0.1:\(port)"] {
            let response = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: refused)
            #expect(response.exitCode != 0 && response.status == 0, "\(refused): \(response.stderr)")
        }
        #expect(origin.requests().count == 1, "nothing refused reached the origin")
        #expect(!proxy.stderrText().contains("s3cret-pw") && !proxy.stdoutText().contains("wrong"), "no password in the logs")
    }

    @Test func refusalsSayWhatHappenedInSOCKSReplies() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let (proxy, port) = try Self.launch(service, [])  // connect-ports: 443 only
        defer { proxy.stop() }

        // curl reports the SOCKS5 reply code in its error text: 2, not allowed by the ruleset.
        let denied = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: "socks5h://127.0.0.1:\(port)")
        #expect(denied.stderr.contains("connection to origin.test. (2)"), "\(denied.stderr)")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == "SOCKS5" }), proxy.diagnostics)
        #expect(entry.string("error")?.contains("port \(origin.port)") == true, "\(entry.jsonText)")
        let unknown = try Curl.fetch("https://missing.test/", proxy: "socks5h://127.0.0.1:\(port)")
        // 4, host unreachable: the name has no HTTPDNS answer.
        #expect(unknown.stderr.contains("connection to missing.test. (4)"), "\(unknown.stderr)")
        #expect(origin.requests().isEmpty)
    }

    /// Byte level, through the binary: what the client reads back for bad input, and that nothing
    /// was dialed (the origin saw no request; the fake service no query).
    @Test func badInputIsRefusedByteForByteAndNothingIsDialed() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let (proxy, port) = try Self.launch(service, ["--connect-ports", String(origin.port)])
        defer { proxy.stop() }
        let name = Array("origin.test".utf8)
        let connect: [UInt8] = [0x05, 0x01, 0x00, 0x03, UInt8(name.count)] + name + [UInt8(origin.port >> 8), UInt8(origin.port & 0xFF)]
        let failure: [UInt8] = [0x05, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0, 0]
        let cases: [(String, [UInt8], [UInt8])] = [
            ("bytes after the request before the reply", [0x05, 0x01, 0x00] + connect + Array("GET / HTTP/1.1\r\n\r\n".utf8), [0x05, 0x00] + failure),
            ("wrong version byte", [0x06, 0x01, 0x00], []),
            ("no method", [0x05, 0x00], [0x05, 0xFF]),
            ("empty name", [0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x03, 0x00, 0x01, 0xBB], [0x05, 0x00] + failure),
            ("4a user id without its NUL", [0x04, 0x01, 0x00, 0x50, 0, 0, 0, 1] + [UInt8](repeating: 0x61, count: 300), [0x00, 0x5B, 0, 0, 0, 0, 0, 0]),
            ("BIND", [0x05, 0x01, 0x00, 0x05, 0x02] + connect.dropFirst(2), [0x05, 0x00, 0x05, 0x07, 0x00, 0x01, 0, 0, 0, 0, 0, 0]),
        ]
        for (label, bytes, expected) in cases {
            let client = try RawClient(port: port)
            defer { client.close() }
            try client.send(bytes)
            #expect(try client.readToEOF(timeout: .seconds(5)) == expected, "\(label)")
        }
        #expect(origin.requests().isEmpty, "nothing was dialed")
        #expect(service.queryCount(for: "origin.test") == 0)
    }

    /// Bytes a client sends after its request, in a later packet and before the reply, wait in
    /// the kernel while the proxy dials, and are relayed once the tunnel is up. The username and
    /// password reply (sent after the request was read, reading paused) is what tells the client
    /// the request has been taken in.
    @Test func bytesInALaterPacketAreRelayedOnceTheTunnelIsUp() async throws {
        let echo = try await TCPEchoServer.start()
        defer { echo.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        let (proxy, port) = try Self.launch(service, ["--connect-ports", String(echo.port), "--proxy-auth", "alice:s3cret-pw"])
        defer { proxy.stop() }
        let client = try RawClient(port: port)
        defer { client.close() }
        try client.send([0x05, 0x01, 0x02])
        #expect(try client.read(exactly: 2) == [0x05, 0x02])
        let auth: [UInt8] = [0x01, 5] + Array("alice".utf8) + [9] + Array("s3cret-pw".utf8)
        let connect: [UInt8] = [0x05, 0x01, 0x00, 0x01, 127, 0, 0, 1, UInt8(echo.port >> 8), UInt8(echo.port & 0xFF)]
        try client.send(auth + connect)
        #expect(try client.read(exactly: 2) == [0x01, 0x00])
        try client.send("ping before the reply")
        let reply = try client.read(exactly: 10)
        #expect(Array(reply.prefix(2)) == [0x05, 0x00], "\(reply)")
        #expect(String(decoding: try client.read(exactly: 21), as: UTF8.self) == "ping before the reply")
    }

    @Test func aClientOutsideAllowClientIsRefusedInSOCKS() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        let (proxy, port) = try Self.launch(service, ["--allow-client", "10.0.0.0/8"])
        defer { proxy.stop() }
        for (hello, expected) in [([0x05, 0x01, 0x00] as [UInt8], [0x05, 0xFF] as [UInt8]), ([0x04, 0x01, 0x01, 0xBB, 127, 0, 0, 1, 0], [0x00, 0x5B, 0, 0, 0, 0, 0, 0])] {
            let client = try RawClient(port: port)
            defer { client.close() }
            try client.send(hello)
            #expect(try client.readToEOF(timeout: .seconds(5)) == expected)
        }
    }

    /// A client that opens the connection and stops mid-handshake is closed at `--header-timeout`
    /// (the proxy's timer: the test only waits for the close).
    @Test func aStalledHandshakeIsClosedAtTheHeaderTimeout() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        let (proxy, port) = try Self.launch(service, ["--header-timeout", "300ms"])
        defer { proxy.stop() }
        let client = try RawClient(port: port)
        defer { client.close() }
        try client.send([0x05, 0x01, 0x00, 0x05, 0x01])  // greeting, then half a request
        // readToEOF throws at its own deadline: an EOF before it is the proxy's close.
        #expect(try client.readToEOF(timeout: .seconds(10)) == [0x05, 0x00])
    }
}
