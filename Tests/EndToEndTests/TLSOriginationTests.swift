import Foundation
import Testing
import TestSupport

/// TLS origination through the real binary: absolute-form `https://` requests and `--tls-upgrade`
/// rules, to loopback TLS origins whose certificates come from a CA generated for the test.
///
/// Names such as `origin.test` are answered by an in-process fake HTTPDNS service (JSON provider,
/// no system DNS), so the proxy dials the IP the "HTTPDNS" chose while TLS uses the name.
@Suite("TLS origination", .onBlockingThreads, .timeLimit(.minutes(2)))
struct TLSOriginationTests {
    static let name = "origin.test"

    /// A test CA, its file, a fake HTTPDNS service, and the proxy arguments that use them.
    struct Fixture {
        let ca: TestCA
        let caFile: String
        let dns: FakeHTTPDNSService

        init() async throws {
            ca = try TestCA()
            caFile = try ca.writeCAFile()
            dns = try await FakeHTTPDNSService.start()
        }

        /// `origin.test` → `ips`, in that order.
        func answer(_ ips: [String]) {
            dns.set(TLSOriginationTests.name, FakeHTTPDNSService.Record(ipv4: ips, ttl: 300))
        }

        /// Resolution through the fake service only; loopback allowed; `--ca-file` unless `trustCA` is false.
        func arguments(trustCA: Bool = true) -> [String] {
            var arguments = [
                "--provider", "json",
                "--resolver-url", "http://localhost:\(dns.port)/resolve",
                "--resolver-ip", "127.0.0.1",
                "--system-fallback", "false",
                "--ip-family", "ipv4",
                "--allow-destination", "127.0.0.0/8",
            ]
            if trustCA { arguments += ["--ca-file", caFile] }
            return arguments
        }

        func origin(_ leaf: TestLeafCertificate, host: String = "127.0.0.1", port: Int = 0) async throws -> TLSTestOrigin {
            try await TLSTestOrigin.start(certificatePEM: leaf.certificatePEM, privateKeyPEM: leaf.privateKeyPEM, host: host, port: port)
        }

        /// An origin on 127.0.0.1 and one on 127.0.0.2 with the same port. The port is free on
        /// 127.0.0.1 but may be taken on 127.0.0.2 by another test's server: then try another.
        func originPair(_ first: TestLeafCertificate, _ second: TestLeafCertificate) async throws -> (TLSTestOrigin, TLSTestOrigin) {
            var attempt = 0
            while true {
                let one = try await origin(first)
                do {
                    return (one, try await origin(second, host: "127.0.0.2", port: one.port))
                } catch {
                    try await one.shutdown()
                    attempt += 1
                    if attempt == 5 { throw error }
                }
            }
        }
    }

    /// `GET https://host:port/path` in absolute form on a new client connection (curl would use
    /// CONNECT for an https URL; plenty of HTTP clients send this form to a proxy).
    static func getAbsolute(_ uri: String, host: String, proxy: ProxyProcess) throws -> RawHTTPResponse {
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        try client.send("GET \(uri) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
        return try client.readResponse()
    }

    static func requestLog(_ proxy: ProxyProcess, count: Int = 1) -> [[String: Any]]? {
        proxy.waitForAccessLogs(count: count, where: { $0.string("type") == "request" })
    }

    // MARK: - Verified origins

    @Test func httpsURIIsOriginatedWithSNIAndHostOfTheName() async throws {
        let fixture = try await Fixture()
        defer { fixture.dns.stop() }
        let origin = try await fixture.origin(try fixture.ca.issueLeaf(dnsNames: [Self.name]))
        fixture.answer([origin.host])
        let proxy = try ProxyProcess.launch(fixture.arguments())
        defer { proxy.stop() }

        // Two requests on one client connection: the second reuses the pooled TLS connection.
        let authority = "\(Self.name):\(origin.port)"
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        for _ in 0..<2 {
            try client.send("GET https://\(authority)/hello HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.statusCode == 200, "\(response.head) \(response.bodyText)\n\(proxy.diagnostics)")
            #expect(response.bodyText == "hello")
            #expect(response.header("x-seen-host") == authority)
        }

        let connections = origin.connections
        #expect(connections.count == 1, "the second request must reuse the pooled TLS connection")
        let seen = try #require(connections.first)
        #expect(seen.serverName == Self.name, "SNI must be the original host")
        #expect(seen.clientHello?.offeredApplicationProtocols == ["http/1.1"])
        #expect(seen.negotiatedProtocol == "http/1.1")
        #expect(seen.requestHosts == [authority, authority], "Host must be kept")

        let entries = try #require(Self.requestLog(proxy, count: 2), proxy.diagnostics)
        let first = entries[0]
        #expect(first.string("scheme") == "https", "\(first.jsonText)")
        #expect(first.string("host") == Self.name, "\(first.jsonText)")
        #expect(first.int("port") == origin.port, "\(first.jsonText)")
        #expect(first.string("ip") == "127.0.0.1", "\(first.jsonText)")
        #expect(first.bool("tls") == true, "\(first.jsonText)")
        #expect(first.bool("tls_resumed") == false, "\(first.jsonText)")
        #expect(first.double("tls_ms") != nil, "\(first.jsonText)")
        #expect(first.int("status") == 200, "\(first.jsonText)")
        #expect(entries[1].bool("reused") == true, "\(entries[1].jsonText)")
        #expect(entries[1].bool("tls") == true, "\(entries[1].jsonText)")
        try await origin.shutdown()
    }

    @Test func ipLiteralIsVerifiedAgainstIPSANsWithoutSNI() async throws {
        let ca = try TestCA()
        let leaf = try ca.issueLeaf(ipAddresses: ["127.0.0.1"])
        let matching = try await TLSTestOrigin.start(certificatePEM: leaf.certificatePEM, privateKeyPEM: leaf.privateKeyPEM)
        let proxy = try ProxyProcess.launch(["--allow-destination", "127.0.0.0/8", "--ca-file", try ca.writeCAFile()])
        defer { proxy.stop() }
        let authority = "127.0.0.1:\(matching.port)"
        let response = try Self.getAbsolute("https://\(authority)/hello", host: authority, proxy: proxy)
        #expect(response.statusCode == 200, "\(response.bodyText)\n\(proxy.diagnostics)")
        #expect(response.bodyText == "hello")
        let seen = try #require(matching.connections.first)
        #expect(seen.clientHello != nil)
        #expect(seen.serverName == nil, "no SNI for an IP literal (RFC 6066)")
        #expect(seen.requestHosts == [authority])
        try await matching.shutdown()
    }

    // MARK: - Certificate failures

    @Test func wrongNameIs502NamingTheProblem() async throws {
        let fixture = try await Fixture()
        defer { fixture.dns.stop() }
        let origin = try await fixture.origin(try fixture.ca.issueLeaf(dnsNames: ["other.test"]))
        fixture.answer([origin.host])
        let proxy = try ProxyProcess.launch(fixture.arguments())
        defer { proxy.stop() }

        let authority = "\(Self.name):\(origin.port)"
        let response = try Self.getAbsolute("https://\(authority)/hello", host: authority, proxy: proxy)
        #expect(response.statusCode == 502, "\(response.bodyText)\n\(proxy.diagnostics)")
        #expect(
            response.bodyText.contains("certificate for origin.test is not valid: hostname mismatch (tried 1 address)"),
            "\(response.bodyText)")
        #expect(response.header("x-proxy-error") == "tls_certificate_invalid")
        #expect(origin.connections.allSatisfy { $0.requestHosts.isEmpty }, "no request may be sent before verification")
        let entry = try #require(Self.requestLog(proxy)?.first, proxy.diagnostics)
        #expect(entry.int("status") == 502, "\(entry.jsonText)")
        #expect(entry.string("error")?.contains("hostname mismatch") == true, "\(entry.jsonText)")
        try await origin.shutdown()
    }

    @Test func untrustedCAIs502() async throws {
        let fixture = try await Fixture()
        defer { fixture.dns.stop() }
        let origin = try await fixture.origin(try fixture.ca.issueLeaf(dnsNames: [Self.name]))
        fixture.answer([origin.host])
        // The test CA is not in the system store, and no --ca-file adds it.
        let proxy = try ProxyProcess.launch(fixture.arguments(trustCA: false))
        defer { proxy.stop() }

        let authority = "\(Self.name):\(origin.port)"
        let response = try Self.getAbsolute("https://\(authority)/hello", host: authority, proxy: proxy)
        #expect(response.statusCode == 502, "\(response.bodyText)\n\(proxy.diagnostics)")
        #expect(response.bodyText.contains("certificate for origin.test is not valid: "), "\(response.bodyText)")
        #expect(response.bodyText.contains("issuer"), "OpenSSL's reason names the missing issuer: \(response.bodyText)")
        #expect(origin.connections.allSatisfy { $0.requestHosts.isEmpty })
        try await origin.shutdown()
    }

    @Test func expiredCertificateIs502() async throws {
        let fixture = try await Fixture()
        defer { fixture.dns.stop() }
        let expired = try fixture.ca.issueLeaf(
            dnsNames: [Self.name],
            notBefore: Date().addingTimeInterval(-30 * 86400),
            notAfter: Date().addingTimeInterval(-86400)
        )
        let origin = try await fixture.origin(expired)
        fixture.answer([origin.host])
        let proxy = try ProxyProcess.launch(fixture.arguments())
        defer { proxy.stop() }

        let authority = "\(Self.name):\(origin.port)"
        let response = try Self.getAbsolute("https://\(authority)/hello", host: authority, proxy: proxy)
        #expect(response.statusCode == 502, "\(response.bodyText)\n\(proxy.diagnostics)")
        #expect(response.bodyText.contains("certificate for origin.test is not valid: certificate has expired"), "\(response.bodyText)")
        try await origin.shutdown()
    }

    /// 127.0.0.2 presents a certificate for another name; 127.0.0.1 (same port) the right one. The
    /// failed verification counts as 127.0.0.2 failing, and the request is served by 127.0.0.1.
    @Test func certificateFailureOnFirstAddressTriesTheNext() async throws {
        let fixture = try await Fixture()
        defer { fixture.dns.stop() }
        let (good, bad) = try await fixture.originPair(
            try fixture.ca.issueLeaf(dnsNames: [Self.name]), try fixture.ca.issueLeaf(dnsNames: ["other.test"]))
        fixture.answer([bad.host, good.host])
        let proxy = try ProxyProcess.launch(fixture.arguments())
        defer { proxy.stop() }

        let authority = "\(Self.name):\(good.port)"
        let response = try Self.getAbsolute("https://\(authority)/hello", host: authority, proxy: proxy)
        #expect(response.statusCode == 200, "\(response.bodyText)\n\(proxy.diagnostics)")
        #expect(response.bodyText == "hello")
        #expect(bad.connections.count == 1, "the first address must have been tried")
        #expect(bad.connections.first?.serverName == Self.name)
        #expect(bad.connections.allSatisfy { $0.requestHosts.isEmpty }, "nothing may be sent to the unverified address")
        #expect(good.connections.first?.requestHosts == [authority])
        let entry = try #require(Self.requestLog(proxy)?.first, proxy.diagnostics)
        #expect(entry.string("ip") == "127.0.0.1", "\(entry.jsonText)")
        #expect(entry.int("status") == 200, "\(entry.jsonText)")
        try await bad.shutdown()
        try await good.shutdown()
    }

    @Test func everyAddressFailingIs502WithTheCount() async throws {
        let fixture = try await Fixture()
        defer { fixture.dns.stop() }
        let (first, second) = try await fixture.originPair(
            try fixture.ca.issueLeaf(dnsNames: ["other.test"]), try fixture.ca.issueLeaf(dnsNames: ["other.test"]))
        fixture.answer([second.host, first.host])
        let proxy = try ProxyProcess.launch(fixture.arguments())
        defer { proxy.stop() }

        let authority = "\(Self.name):\(first.port)"
        let response = try Self.getAbsolute("https://\(authority)/hello", host: authority, proxy: proxy)
        #expect(response.statusCode == 502, "\(response.bodyText)\n\(proxy.diagnostics)")
        #expect(
            response.bodyText.contains("certificate for origin.test is not valid: hostname mismatch (tried 2 addresses)"),
            "\(response.bodyText)")
        #expect(first.connections.count == 1 && second.connections.count == 1, "each address is tried once")
        try await first.shutdown()
        try await second.shutdown()
    }

    @Test func spkiPinsFromTheConfigFile() async throws {
        let fixture = try await Fixture()
        defer { fixture.dns.stop() }
        let leaf = try fixture.ca.issueLeaf(dnsNames: [Self.name])
        let origin = try await fixture.origin(leaf)
        fixture.answer([origin.host])
        let authority = "\(Self.name):\(origin.port)"

        // A pin of another key: the chain is fine, the pin is not.
        let otherPin = try fixture.ca.issueLeaf(dnsNames: [Self.name]).spkiSHA256Base64()
        let wrong = try TestCA.writeTemporaryFile(named: "proxy.yaml", contents: "spki-pins:\n  \(Self.name):\n    - \(otherPin)\n")
        let pinnedWrong = try ProxyProcess.launch(fixture.arguments() + ["--config", wrong])
        defer { pinnedWrong.stop() }
        let refused = try Self.getAbsolute("https://\(authority)/hello", host: authority, proxy: pinnedWrong)
        #expect(refused.statusCode == 502, "\(refused.bodyText)\n\(pinnedWrong.diagnostics)")
        #expect(refused.bodyText.contains("certificate for origin.test is not valid: pin mismatch"), "\(refused.bodyText)")

        let right = try TestCA.writeTemporaryFile(
            named: "proxy.yaml", contents: "spki-pins:\n  \(Self.name):\n    - \(otherPin)\n    - \(try leaf.spkiSHA256Base64())\n")
        let pinnedRight = try ProxyProcess.launch(fixture.arguments() + ["--config", right])
        defer { pinnedRight.stop() }
        let served = try Self.getAbsolute("https://\(authority)/hello", host: authority, proxy: pinnedRight)
        #expect(served.statusCode == 200, "\(served.bodyText)\n\(pinnedRight.diagnostics)")
        try await origin.shutdown()
    }

    /// An origin that accepts TCP and never answers the ClientHello: the handshake is bounded by
    /// --connect-timeout, and the client gets 504 saying so.
    @Test func silentOriginTimesOutTheHandshake() async throws {
        let silent = try await SilentTCPServer.start()
        let proxy = try ProxyProcess.launch(["--allow-destination", "127.0.0.0/8", "--connect-timeout", "300ms"])
        defer { proxy.stop() }
        let authority = "127.0.0.1:\(silent.port)"
        let response = try Self.getAbsolute("https://\(authority)/hello", host: authority, proxy: proxy)
        #expect(response.statusCode == 504, "\(response.bodyText)\n\(proxy.diagnostics)")
        // The message itself proves the TCP connection was made and the TLS stage timed out. (The
        // server's own accept count is not checked: under load its accept can run after the 504.)
        #expect(response.bodyText.contains("TLS handshake with 127.0.0.1 timed out"), "\(response.bodyText)")
        #expect(silent.acceptedConnections <= 1, "one address, one attempt")
        try await silent.shutdown()
    }

    // MARK: - tls-upgrade, sessions, start-up

    /// The sidecar pattern: the client speaks plain HTTP (curl with an http:// URL), the origin only
    /// speaks TLS, and a rule makes the proxy originate TLS for that host and port.
    @Test func tlsUpgradeRuleSendsPlainHTTPRequestsOverTLS() async throws {
        let fixture = try await Fixture()
        defer { fixture.dns.stop() }
        let origin = try await fixture.origin(try fixture.ca.issueLeaf(dnsNames: [Self.name]))
        fixture.answer([origin.host])
        let authority = "\(Self.name):\(origin.port)"
        let proxy = try ProxyProcess.launch(fixture.arguments() + ["--tls-upgrade", authority])
        defer { proxy.stop() }

        let response = try Curl.fetch("http://\(authority)/hello", proxy: proxy.proxyURL)
        #expect(response.exitCode == 0, "curl: \(response.stderr)")
        #expect(response.status == 200, "\(response.bodyText)\n\(proxy.diagnostics)")
        #expect(response.bodyText == "hello")
        let seen = try #require(origin.connections.first)
        #expect(seen.handshakeCompleted)
        #expect(seen.serverName == Self.name)
        #expect(seen.requestHosts == [authority], "the Host header stays what the client sent")

        let entry = try #require(Self.requestLog(proxy)?.first, proxy.diagnostics)
        #expect(entry.string("scheme") == "http", "the log keeps the request as the client sent it: \(entry.jsonText)")
        #expect(entry.string("host") == Self.name, "\(entry.jsonText)")
        #expect(entry.int("port") == origin.port, "\(entry.jsonText)")
        #expect(entry.bool("tls") == true, "\(entry.jsonText)")
        try await origin.shutdown()
    }

    @Test func secondConnectionResumesTheSession() async throws {
        let fixture = try await Fixture()
        defer { fixture.dns.stop() }
        let origin = try await fixture.origin(try fixture.ca.issueLeaf(dnsNames: [Self.name]))
        fixture.answer([origin.host])
        // No idle upstream connections: every request makes a new TLS connection.
        let proxy = try ProxyProcess.launch(fixture.arguments() + ["--pool-max-idle", "0"])
        defer { proxy.stop() }

        let authority = "\(Self.name):\(origin.port)"
        for _ in 0..<2 {
            let response = try Self.getAbsolute("https://\(authority)/hello", host: authority, proxy: proxy)
            #expect(response.statusCode == 200, "\(response.bodyText)\n\(proxy.diagnostics)")
        }
        let connections = origin.connections
        #expect(connections.count == 2, "pool off: one upstream connection per request")
        #expect(connections.first?.clientHello?.offeredSessionResumption == false)
        #expect(connections.last?.clientHello?.offeredSessionResumption == true, "the second ClientHello must offer the session")
        let entries = try #require(Self.requestLog(proxy, count: 2), proxy.diagnostics)
        #expect(entries[0].bool("tls_resumed") == false, "\(entries[0].jsonText)")
        #expect(entries[1].bool("tls_resumed") == true, "\(entries[1].jsonText)")
        #expect(entries[1].bool("reused") == false, "\(entries[1].jsonText)")
        try await origin.shutdown()
    }

    @Test func unreadableCAFileStopsTheStart() throws {
        let path = try TestCA.writeTemporaryFile(named: "not-a-ca.pem", contents: "this is not PEM\n")
        let proxy = try ProxyProcess(["--ca-file", path])
        defer { proxy.stop() }
        do {
            try proxy.start(timeout: .seconds(20))
            Issue.record("the proxy started with an unusable --ca-file")
        } catch {
            let text = "\(error)"
            #expect(text.contains("exited with status"), "\(text)")
            #expect(text.contains("cannot load CA file \(path)"), "\(text)")
        }
    }
}
