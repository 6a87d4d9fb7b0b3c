import Foundation
import Glibc
import Testing
import TestSupport

/// SIGHUP and `POST /reload`: the configuration file and environment are read again and applied
/// to new requests; open connections and tunnels carry on; an invalid file changes nothing.
@Suite("Configuration reload", .onBlockingThreads, .timeLimit(.minutes(1)))
struct ReloadTests {
    static func write(_ yaml: String, to path: String) throws {
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
    }

    static func reload(_ proxy: ProxyProcess) throws -> Curl.Response {
        try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/reload", proxy: nil, extra: ["-X", "POST"])
    }

    /// `/stats` → `reload`.
    static func statsReload(_ proxy: ProxyProcess) throws -> [String: Any] {
        let stats = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/stats", proxy: nil)
        let json = try #require(try JSONSerialization.jsonObject(with: stats.body) as? [String: Any], "\(stats.bodyText)")
        return try #require(json["reload"] as? [String: Any], "no reload in /stats: \(stats.bodyText)")
    }

    /// Each name is an option `httpdns-proxy serve --help` (the default command's help) lists as `--name`.
    static func expectHelpSpells(_ names: [String]) throws {
        let help = try ExternalTool.run(try ProxyProcess.binaryURL().path, ["serve", "--help"], timeout: .seconds(20))
        for name in names {
            #expect(help.stdout.contains("--\(name) "), "--help does not spell \(name):\n\(help.stdout.prefix(3000))")
        }
    }

    @Test func newConnectionsFollowTheFileOpenOnesCarryOn() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let echo = try await TCPEchoServer.start()
        defer { echo.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString).yaml").path
        defer { unlink(file) }
        try Self.write("allow-destination: [127.0.0.0/8]\nconnect-ports: [\(echo.port)]\n", to: file)
        let proxy = try ProxyProcess.launch(["--config", file])
        defer { proxy.stop() }

        // A tunnel and a kept-alive connection, open across the reload.
        let tunnel = try RawClient(port: proxy.port)
        try tunnel.send("CONNECT \(echo.authority) HTTP/1.1\r\nHost: \(echo.authority)\r\n\r\n")
        #expect(try tunnel.readHead().statusCode == 200)
        let keeper = try RawClient(port: proxy.port)
        let get = "GET \(origin.url("/hello")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n"
        try keeper.send(get)
        #expect(try keeper.readResponse().statusCode == 200)

        try Self.write("allow-destination: [127.0.0.0/8]\nallow-client: [127.0.0.2/32]\nthreads: 3\n", to: file)
        let answer = try Self.reload(proxy)
        #expect(answer.status == 200, "\(answer.bodyText)")
        // Options named as --help spells them, in its order, in the answer, the log line and /stats.
        let expected = "applied to new requests: connect-ports, allow-client; needs a restart (not applied): threads"
        #expect(answer.bodyText == expected + "\n", "\(answer.bodyText)")
        let logged = proxy.waitForLog(where: { $0["message"] as? String == "configuration reloaded" })
        #expect(logged?["result"] as? String == expected, "\(logged ?? [:])")
        #expect(logged?["applied"] as? String == "connect-ports,allow-client", "\(logged ?? [:])")
        #expect(logged?["needs_restart"] as? String == "threads", "\(logged ?? [:])")
        let reload = try Self.statsReload(proxy)
        #expect(reload["applied"] as? [String] == ["connect-ports", "allow-client"], "\(reload)")
        #expect(reload["needsRestart"] as? [String] == ["threads"], "\(reload)")
        #expect(reload["reloads"] as? Int == 1 && reload["lastResult"] as? String == "ok", "\(reload)")
        try Self.expectHelpSpells(["connect-ports", "allow-client", "threads"])

        // New connections: the new ACL.
        #expect(try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL).status == 403)
        let allowed = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["--interface", "127.0.0.2"])
        #expect(allowed.status == 200, "\(allowed.stderr)")
        // Open ones carry on: the tunnel still echoes, the kept-alive client is still served.
        try tunnel.send("still here")
        #expect(String(decoding: try tunnel.read(exactly: 10), as: UTF8.self) == "still here")
        try keeper.send(get)
        #expect(try keeper.readResponse().statusCode == 200)
        // ... and its next CONNECT follows the reloaded ports (443 only now).
        try keeper.send("CONNECT \(echo.authority) HTTP/1.1\r\nHost: \(echo.authority)\r\n\r\n")
        #expect(try keeper.readResponse(requestMethod: "CONNECT").statusCode == 403)
        let metrics = MetricsTests.samples(try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/metrics", proxy: nil).bodyText)
        #expect(metrics["httpdns_proxy_config_reloads_total{result=\"ok\"}"] == 1)
    }

    @Test func anInvalidFileChangesNothingAndSIGHUPReloadsToo() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString).yaml").path
        defer { unlink(file) }
        try Self.write("allow-destination: [127.0.0.0/8]\n", to: file)
        let proxy = try ProxyProcess.launch(["--config", file])
        defer { proxy.stop() }

        try Self.write("allow-destination: [127.0.0.0/8\n", to: file)
        let broken = try Self.reload(proxy)
        #expect(broken.status == 422)
        #expect(broken.bodyText.contains("not valid YAML"), "\(broken.bodyText)")
        #expect(try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/healthz", proxy: nil).status == 200)
        #expect(try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL).status == 200, "the running configuration stays")
        let failed = proxy.waitForLog(where: { ($0["message"] as? String)?.hasPrefix("configuration reload failed") == true })
        #expect((failed?["error"] as? String)?.contains("not valid YAML") == true)
        let reload = try Self.statsReload(proxy)
        #expect(reload["lastResult"] as? String == "error" && reload["failures"] as? Int == 1, "\(reload)")
        #expect((reload["lastError"] as? String)?.contains("not valid YAML") == true, "\(reload)")

        // Credentials required from now on, by SIGHUP.
        try Self.write("allow-destination: [127.0.0.0/8]\nproxy-auth: ['alice:pw1']\n", to: file)
        proxy.signal(SIGHUP)
        #expect(proxy.waitForLog(where: { $0["message"] as? String == "configuration reloaded" && $0["trigger"] as? String == "SIGHUP" }) != nil,
                proxy.diagnostics)
        #expect(try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL).status == 407)
        #expect(try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-U", "alice:pw1"]).status == 200)

        // A password change reaches even a kept-alive connection that was verified before.
        let keeper = try RawClient(port: proxy.port)
        let get = "GET \(origin.url("/hello")) HTTP/1.1\r\nHost: \(origin.authority)\r\nProxy-Authorization: Basic YWxpY2U6cHcx\r\n\r\n"  // alice:pw1
        try keeper.send(get)
        #expect(try keeper.readResponse().statusCode == 200)
        try Self.write("allow-destination: [127.0.0.0/8]\nproxy-auth: ['alice:pw2']\n", to: file)
        #expect(try Self.reload(proxy).status == 200)
        try keeper.send(get)
        #expect(try keeper.readResponse().statusCode == 407)

        let metrics = MetricsTests.samples(try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/metrics", proxy: nil).bodyText)
        #expect(metrics["httpdns_proxy_config_reloads_total{result=\"error\"}"] == 1)
        #expect(metrics["httpdns_proxy_config_reloads_total{result=\"ok\"}"] == 2)
    }

    @Test func resolverSettingsChangeUnderAKeptCache() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let first = try await FakeHTTPDNSService.start()
        defer { first.stop() }
        let second = try await FakeHTTPDNSService.start()
        defer { second.stop() }
        first.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        second.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        second.set("other.test", .init(ipv4: ["127.0.0.1"], ttl: 3000))
        func config(_ service: FakeHTTPDNSService, maxTTL: String) -> String {
            """
            resolver-url: http://localhost:\(service.port)/resolve
            resolver-ip: [127.0.0.1]
            system-fallback: false
            ip-family: ipv4
            max-ttl: \(maxTTL)
            allow-destination: [127.0.0.0/8]
            pool-max-idle: 0

            """
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString).yaml").path
        defer { unlink(file) }
        try Self.write(config(first, maxTTL: "3600s"), to: file)
        // The fixed test flags say --provider system; the last flag wins.
        let proxy = try ProxyProcess.launch(["--provider", "json", "--config", file])
        defer { proxy.stop() }
        #expect(try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL).status == 200, proxy.diagnostics)
        #expect(first.queryCount(for: "origin.test") == 1)

        try Self.write(config(second, maxTTL: "600s") + "threads: 3\n", to: file)
        let answer = try Self.reload(proxy)
        #expect(answer.status == 200, "\(answer.bodyText)")
        let expected = "applied to new requests: resolver-url, max-ttl; needs a restart (not applied): threads"
        #expect(answer.bodyText == expected + "\n", "\(answer.bodyText)")
        let reload = try Self.statsReload(proxy)
        #expect(reload["applied"] as? [String] == ["resolver-url", "max-ttl"], "\(reload)")
        #expect(reload["needsRestart"] as? [String] == ["threads"], "\(reload)")
        try Self.expectHelpSpells(["resolver-url", "max-ttl", "threads"])

        // The cache is kept: origin.test is answered from it, nobody is asked.
        #expect(try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL).status == 200)
        #expect(first.queryCount(for: "origin.test") == 1 && second.queryCount(for: "origin.test") == 0)
        // A new name goes to the new service.
        #expect(try Curl.fetch("http://other.test:\(origin.port)/hello", proxy: proxy.proxyURL).status == 200, proxy.diagnostics)
        #expect(second.queryCount(for: "other.test") == 1 && first.queryCount(for: "other.test") == 0)
        // The new clamp applies to what is stored from now on: a 3,000 s answer is kept 600 s.
        let cache = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/cache", proxy: nil)
        let json = try #require(try JSONSerialization.jsonObject(with: cache.body) as? [String: Any])
        let entries = try #require(json["entries"] as? [[String: Any]], "\(cache.bodyText)")
        let other = try #require(entries.first { $0["name"] as? String == "other.test" }, "\(cache.bodyText)")
        #expect(cache.bodyText.contains("origin.test"), "the entry from before the reload is kept")
        #expect((other["ttl"] as? Double) == 600, "max-ttl 600s must cap the new answer: \(other)")
    }
}
