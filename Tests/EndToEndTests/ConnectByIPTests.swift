import Foundation
import Testing
import TestSupport

/// Connecting by IP through the real binary: failover between the addresses of an HTTPDNS answer,
/// per-address health (back-off, learned connect time, `/health/ips`), retry of idempotent requests
/// on another address, and system DNS when every HTTPDNS address failed. Loopback only: a "dead"
/// address is 127.0.0.66 (no test server ever binds it) at the port where 127.0.0.1 listens. Names other than `localhost` exist
/// only in the fake HTTPDNS service, and those tests run with `--system-fallback false`.
@Suite("Connecting by IP", .onBlockingThreads, .timeLimit(.minutes(2)))
struct ConnectByIPTests {
    /// JSON provider at `service`, IPv4 answers, no upstream pooling (every request dials).
    static func arguments(_ service: FakeHTTPDNSService, allow: String = "127.0.0.0/8", fallback: Bool = false) -> [String] {
        [
            "--provider", "json", "--resolver-url", "http://localhost:\(service.port)/resolve", "--resolver-ip", "127.0.0.1",
            "--ip-family", "ipv4", "--allow-destination", allow, "--pool-max-idle", "0",
        ] + (fallback ? [] : ["--system-fallback", "false"])
    }

    /// `/health/ips` entries keyed by "ip:port".
    static func health(_ proxy: ProxyProcess) throws -> [String: [String: Any]] {
        let response = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/health/ips", proxy: nil)
        #expect(response.status == 200)
        let json = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
        #expect(json["backoffMs"] as? Int == 30_000)
        #expect(json["maxBackoffMs"] as? Int == 300_000)
        let entries = try #require(json["ips"] as? [[String: Any]], "\(response.bodyText)")
        var byEndpoint: [String: [String: Any]] = [:]
        for entry in entries {
            byEndpoint["\(entry["ip"] as? String ?? "?"):\(entry["port"] as? Int ?? 0)"] = entry
        }
        return byEndpoint
    }

    @Test func aDeadFirstIPFailsOverAndIsNotDialedFirstAgain() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.66", "127.0.0.1"], ttl: 300))
        let proxy = try ProxyProcess.launch(Self.arguments(service))
        defer { proxy.stop() }
        let dead = "127.0.0.66:\(origin.port)"
        let live = "127.0.0.1:\(origin.port)"

        let first = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(first.status == 200, "\(first.bodyText) \(proxy.diagnostics)")
        let firstEntry = try #require(proxy.waitForAccessLog(where: { $0.string("path") == "/hello" }), proxy.diagnostics)
        #expect(firstEntry.string("ip") == "127.0.0.1")
        var health = try Self.health(proxy)
        #expect(health[dead]?["state"] as? String == "backoff", "\(health)")
        #expect(health[dead]?["failures"] as? Int == 1)
        #expect(health[dead]?["consecutiveFailures"] as? Int == 1)
        #expect(health[dead]?["lastFailure"] as? String == "refused")
        #expect((health[dead]?["backoffRemainingMs"] as? Int ?? 0) > 20_000)
        #expect(health[live]?["state"] as? String == "healthy")
        #expect(health[live]?["successes"] as? Int == 1)
        #expect(health[live]?["connectMsEWMA"] as? Double != nil)

        let second = try Curl.fetch("http://origin.test:\(origin.port)/hello?again", proxy: proxy.proxyURL)
        #expect(second.status == 200, "\(second.bodyText) \(proxy.diagnostics)")
        let entries = try #require(proxy.waitForAccessLogs(count: 2, where: { $0.string("path") == "/hello" }), proxy.diagnostics)
        #expect(entries[1].string("ip") == "127.0.0.1")
        #expect(entries[1].string("source") == "cache")
        health = try Self.health(proxy)
        // Had it been dialed first again it would have been refused again.
        #expect(health[dead]?["failures"] as? Int == 1, "\(health)")
        #expect(health[live]?["successes"] as? Int == 2)
        #expect(origin.connectionCount == 2)
    }

    @Test func anAddressThatClosesBeforeAnsweringIsRetriedElsewhereForGET() async throws {
        let (good, broken) = try await Self.samePortPair()
        defer { good.stop() }
        defer { broken.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.2", "127.0.0.1"], ttl: 300))
        let proxy = try ProxyProcess.launch(Self.arguments(service))
        defer { proxy.stop() }

        let response = try Curl.fetch("http://origin.test:\(good.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
        #expect(response.bodyText == "hello")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("path") == "/hello" }), proxy.diagnostics)
        #expect(entry.string("ip") == "127.0.0.1")
        #expect(broken.requests().count == 1, "the first try went to the broken address")
        #expect(good.requests().count == 1)
        let health = try Self.health(proxy)
        #expect(health["127.0.0.2:\(good.port)"]?["state"] as? String == "backoff", "\(health)")
        #expect(health["127.0.0.2:\(good.port)"]?["lastFailure"] as? String == "closed")

        // The next request goes to the healthy address first: the broken one sees nothing more.
        let again = try Curl.fetch("http://origin.test:\(good.port)/hello?again", proxy: proxy.proxyURL)
        #expect(again.status == 200, "\(again.bodyText) \(proxy.diagnostics)")
        #expect(broken.connectionCount == 1)
        #expect(good.requests().count == 2)
    }

    @Test func aPOSTIsNotRetried() async throws {
        let (good, broken) = try await Self.samePortPair()
        defer { good.stop() }
        defer { broken.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.2", "127.0.0.1"], ttl: 300))
        let proxy = try ProxyProcess.launch(Self.arguments(service))
        defer { proxy.stop() }

        let response = try Curl.fetch("http://origin.test:\(good.port)/digest", proxy: proxy.proxyURL, extra: ["--data-binary", "payload"])
        #expect(response.status == 502, "\(response.bodyText) \(proxy.diagnostics)")
        #expect(response.bodyText.contains("closed the connection without answering"))
        #expect(broken.requests().count == 1)
        #expect(good.requests().isEmpty, "a POST must never be sent twice")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("path") == "/digest" }), proxy.diagnostics)
        #expect(entry.int("status") == 502)
        #expect(entry.string("ip") == "127.0.0.2")
    }

    @Test func whenEveryHTTPDNSAddressIsDeadSystemDNSIsUsed() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        // HTTPDNS says 127.0.0.66 (nothing listens there); /etc/hosts says 127.0.0.1.
        service.set("localhost", .init(ipv4: ["127.0.0.66"], ttl: 300))
        let proxy = try ProxyProcess.launch(Self.arguments(service, fallback: true))
        defer { proxy.stop() }

        let response = try Curl.fetch("http://localhost:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("path") == "/hello" }), proxy.diagnostics)
        #expect(entry.string("source") == "system_fallback")
        #expect(entry.string("ip") == "127.0.0.1")
        #expect(service.queryCount(for: "localhost") == 1, "HTTPDNS must be asked first")
        #expect(proxy.logEntries().contains { $0["message"] as? String == "every HTTPDNS address failed; trying system DNS" }, proxy.diagnostics)

        let stats = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/stats", proxy: nil)
        let json = try #require(try JSONSerialization.jsonObject(with: stats.body) as? [String: Any])
        let domains = try #require(json["domains"] as? [[String: Any]])
        let localhost = try #require(domains.first { $0["name"] as? String == "localhost" }, "\(stats.bodyText)")
        #expect(localhost["fallbacksToSystem"] as? Int == 1)
        let health = try Self.health(proxy)
        #expect(health["127.0.0.66:\(origin.port)"]?["state"] as? String == "backoff", "\(health)")
    }

    @Test func systemDNSFallbackAddressesGoThroughThePolicy() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("localhost", .init(ipv4: ["127.0.0.66"], ttl: 300))
        // Only the HTTPDNS answer is allowed; the system's 127.0.0.1 (and ::1) must not be dialed.
        let proxy = try ProxyProcess.launch(Self.arguments(service, allow: "127.0.0.66/32", fallback: true))
        defer { proxy.stop() }

        let response = try Curl.fetch("http://localhost:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 502, "\(response.bodyText) \(proxy.diagnostics)")
        #expect(response.bodyText.contains("127.0.0.66: connection refused"), "\(response.bodyText)")
        #expect(response.bodyText.contains("system DNS fallback: destination denied by policy"), "\(response.bodyText)")
        #expect(origin.connectionCount == 0)
    }

    @Test func aCONNECTTunnelFailsOverToo() async throws {
        let echo = try await TCPEchoServer.start()
        defer { echo.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("tunnel.test", .init(ipv4: ["127.0.0.66", "127.0.0.1"], ttl: 300))
        let proxy = try ProxyProcess.launch(Self.arguments(service) + ["--connect-ports", "\(echo.port)"])
        defer { proxy.stop() }

        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        try client.send("CONNECT tunnel.test:\(echo.port) HTTP/1.1\r\nHost: tunnel.test:\(echo.port)\r\n\r\n")
        let head = try client.readHead()
        #expect(head.statusCode == 200, proxy.diagnostics)
        try client.send("ping")
        #expect(String(decoding: try client.read(exactly: 4), as: UTF8.self) == "ping")
        client.close()
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == "CONNECT" }), proxy.diagnostics)
        #expect(entry.string("ip") == "127.0.0.1")
        let health = try Self.health(proxy)
        #expect(health["127.0.0.66:\(echo.port)"]?["state"] as? String == "backoff", "\(health)")
    }

    /// A good origin on 127.0.0.1 and a closing one on 127.0.0.2 with the same port. The port is
    /// free on 127.0.0.1 but may be taken on 127.0.0.2 by another test's server: then try another.
    static func samePortPair() async throws -> (TestOrigin, TestOrigin) {
        var attempt = 0
        while true {
            let good = try await TestOrigin.start(host: "127.0.0.1")
            do {
                return (good, try await TestOrigin.start(host: "127.0.0.2", port: good.port, closeEverything: true))
            } catch {
                good.stop()
                attempt += 1
                if attempt == 5 { throw error }
            }
        }
    }
}
