import Foundation
import Testing
import TestSupport

/// `--socks-sniff`: a SOCKS client that resolved the name itself, through a local DNS that lies
/// (curl `--socks5` with `--resolve origin.test:PORT:127.0.0.3`, where nothing listens), still
/// reaches the HTTPDNS address of the name its first bytes carry: the Host of a request, the SNI
/// of a ClientHello. What names nothing goes to the address as given.
@Suite("SOCKS sniff", .onBlockingThreads, .timeLimit(.minutes(2)))
struct SOCKSSniffTests {
    static let hijacked = "127.0.0.3"

    static func launch(_ service: FakeHTTPDNSService, _ extra: [String]) throws -> ProxyProcess {
        try HTTPDNSResolutionTests.launchOnService(service, extra)
    }

    @Test func anHTTPClientToAHijackedAddressReachesTheHTTPDNSAddressByItsHost() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let url = "http://origin.test:\(origin.port)/hello"
        let lie = ["--resolve", "origin.test:\(origin.port):\(Self.hijacked)"]

        let off = try Self.launch(service, ["--connect-ports", String(origin.port)])
        let refused = try Curl.fetch(url, proxy: "socks5://127.0.0.1:\(off.port)", extra: lie)
        off.stop()
        #expect(refused.exitCode != 0 && refused.status == 0, "without sniffing the lie is dialed: \(refused.stderr)")
        #expect(origin.requests().isEmpty)

        let proxy = try Self.launch(service, ["--connect-ports", String(origin.port), "--socks-sniff", "true"])
        defer { proxy.stop() }
        let response = try Curl.fetch(url, proxy: "socks5://127.0.0.1:\(proxy.port)", extra: lie)
        #expect(response.status == 200 && response.bodyText == "hello", "\(response.stderr) \(proxy.diagnostics)")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == "SOCKS5" }), proxy.diagnostics)
        #expect(entry.string("host") == "origin.test")
        #expect(entry.string("ip") == "127.0.0.1")
        #expect(entry.string("original_dst") == "\(Self.hijacked):\(origin.port)", "\(entry.jsonText)")
        #expect(entry.string("peek") == "http_host", "\(entry.jsonText)")
        #expect(origin.requests().count == 1)
        #expect(origin.requests().first?.headers["host"] == ["origin.test:\(origin.port)"], "the request is relayed byte for byte")
    }

    @Test func aTLSClientIsSteeredByItsSNIAndVerifiesTheOrigin() async throws {
        let ca = try TestCA()
        let caFile = try ca.writeCAFile()
        let leaf = try ca.issueLeaf(dnsNames: ["origin.test"])
        let origin = try await TLSTestOrigin.start(certificatePEM: leaf.certificatePEM, privateKeyPEM: leaf.privateKeyPEM)
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let proxy = try Self.launch(service, ["--connect-ports", String(origin.port), "--socks-sniff", "true"])
        defer { proxy.stop() }

        let response = try Curl.fetch(
            "https://origin.test:\(origin.port)/hello", proxy: "socks5://127.0.0.1:\(proxy.port)",
            extra: ["--resolve", "origin.test:\(origin.port):\(Self.hijacked)", "--cacert", caFile])
        #expect(response.status == 200 && response.bodyText == "hello", "\(response.stderr) \(proxy.diagnostics)")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == "SOCKS5" }), proxy.diagnostics)
        #expect(entry.string("host") == "origin.test")
        #expect(entry.string("peek") == "tls_sni", "\(entry.jsonText)")
        #expect(origin.connections.first?.serverName == "origin.test")
        try await origin.shutdown()
    }

    static func connect(to port: Int) -> [UInt8] {
        [0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x01, 127, 0, 0, 1, UInt8(port >> 8), UInt8(port & 0xFF)]
    }

    static let granted: [UInt8] = [0x05, 0x00, 0x05, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0]

    /// A client that says nothing (a server-speaks-first protocol) is granted at once and dialed
    /// as given at the peek timeout (the proxy's timer: the test waits for the server to see the
    /// connection, not for time to pass).
    @Test func aSilentClientIsDialedAsGivenAtThePeekTimeout() async throws {
        let server = try await SilentTCPServer.start()
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        let proxy = try Self.launch(service, ["--connect-ports", String(server.port), "--socks-sniff", "true", "--transparent-peek-timeout", "200ms"])
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        try client.send(Self.connect(to: server.port))
        #expect(try client.read(exactly: Self.granted.count) == Self.granted, "granted before any dial")
        #expect(try AccessControlTests.eventually { server.acceptedConnections == 1 }, proxy.diagnostics)
        client.close()
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == "SOCKS5" }), proxy.diagnostics)
        #expect(entry.string("peek") == "silent", "\(entry.jsonText)")
        #expect(entry.string("host") == "127.0.0.1" && entry.string("original_dst") == "127.0.0.1:\(server.port)", "\(entry.jsonText)")
        try await server.shutdown()
    }

    /// Bytes that are neither TLS nor HTTP name nothing: dialed as given at once, and relayed.
    @Test func bytesThatNameNothingGoToTheAddressAsGiven() async throws {
        let echo = try await TCPEchoServer.start()
        defer { echo.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        let proxy = try Self.launch(service, ["--connect-ports", String(echo.port), "--socks-sniff", "true"])
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        try client.send(Self.connect(to: echo.port))
        #expect(try client.read(exactly: Self.granted.count) == Self.granted)
        let bytes = "\u{1}\u{2}not tls, not http"
        try client.send(bytes)
        #expect(String(decoding: try client.read(exactly: bytes.utf8.count), as: UTF8.self) == bytes)
        client.close()
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == "SOCKS5" }), proxy.diagnostics)
        #expect(entry.string("peek") == "unknown", "\(entry.jsonText)")
        #expect(entry.string("original_dst") == "127.0.0.1:\(echo.port)", "\(entry.jsonText)")
    }
}
