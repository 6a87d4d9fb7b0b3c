import Foundation
import Glibc
import Testing
import TestSupport

/// The proxy against the fake Alibaba v2 service (loopback only): signed, AES-GCM encrypted
/// queries and service-IP scheduling. `origin.test` exists only in the fake service, and
/// `--system-fallback false` keeps every name from reaching system DNS.
@Suite("Alibaba HTTPDNS v2", .onBlockingThreads, .timeLimit(.minutes(2)))
struct AlibabaV2ResolutionTests {
    static let secret = "5ec2e7a1b0c9d8e7f6a5b4c3d2e1f0a9"
    static let aesKey = "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"

    static func arguments(_ service: FakeAlibabaV2Service) -> [String] {
        [
            "--provider", "alibaba", "--resolver-url", "http://localhost:\(service.port)", "--resolver-ip", "127.0.0.1",
            "--account-id", "139450", "--alibaba-encryption", "gcm", "--system-fallback", "false",
            "--allow-destination", "127.0.0.0/8", "--ip-family", "ipv4",
        ]
    }

    @Test func signedEncryptedQueriesThroughScheduledServiceIPs() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeAlibabaV2Service.start(account: "139450", secretHex: Self.secret, aesKeyHex: Self.aesKey)
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        service.setSchedule(.ips(["127.0.0.1"]))
        let proxy = try ProxyProcess.launch(
            Self.arguments(service) + ["--log-level", "debug"],
            environment: ["HTTPDNS_PROXY_SECRET": Self.secret, "HTTPDNS_PROXY_AES_KEY": Self.aesKey])
        defer { proxy.stop() }

        let response = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
        #expect(response.bodyText == "hello")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("path") == "/hello" }), proxy.diagnostics)
        #expect(entry.string("source") == "httpdns")

        // The fake service only answers requests whose signature and GCM payload check out.
        let query = try #require(service.queryRequests.last)
        #expect(query.query["m"] == "2")
        #expect(query.query["dn"] == nil)
        #expect(query.query["s"]?.count == 64)

        #expect(proxy.waitForLog(where: { ($0["message"] as? String) == "service-IP scheduling answered" }) != nil, proxy.diagnostics)
        #expect(service.scheduleRequests.count >= 1)
        let stats = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/stats", proxy: nil)
        let json = try #require(try JSONSerialization.jsonObject(with: stats.body) as? [String: Any])
        let scheduler = try #require(json["alibabaScheduler"] as? [String: Any], "\(stats.bodyText)")
        #expect(scheduler["serviceIPs"] as? [String] == ["127.0.0.1"])
        #expect(scheduler["source"] as? String == "scheduled")
        #expect(scheduler["lastResult"] as? String == "ok")

        let output = proxy.stderrText() + proxy.stdoutText()
        #expect(!output.contains(Self.secret))
        #expect(!output.contains(Self.aesKey))
        #expect(!output.contains(query.query["s"] ?? "-"))
    }

    @Test func disabledServiceIsNotAskedAndTheClientHearsWhy() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450", secretHex: Self.secret, aesKeyHex: Self.aesKey)
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        service.setSchedule(.disabled)
        let proxy = try ProxyProcess.launch(
            Self.arguments(service),
            environment: ["HTTPDNS_PROXY_SECRET": Self.secret, "HTTPDNS_PROXY_AES_KEY": Self.aesKey])
        defer { proxy.stop() }
        let logged = proxy.waitForLog(where: { ($0["message"] as? String)?.contains("service_status: disable") ?? false })
        #expect(logged != nil, proxy.diagnostics)
        let response = try Curl.fetch("http://origin.test/", proxy: proxy.proxyURL)
        #expect(response.status == 502, "\(response.bodyText)")
        #expect(response.bodyText.contains("disable"), "\(response.bodyText)")
        #expect(service.queryRequests.isEmpty)
    }

    /// A reload from v1 to v2 builds a v2 provider whose scheduler must run (the launcher's flags
    /// fix the provider; the file switches the API).
    @Test func aReloadIntoV2StartsScheduling() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeAlibabaV2Service.start(account: "139450", secretHex: Self.secret)
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        service.setSchedule(.ips(["127.0.0.1"]))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("reload-v2-\(UUID().uuidString).yaml").path
        defer { unlink(file) }
        try "alibaba-api: v1\n".write(toFile: file, atomically: true, encoding: .utf8)
        let arguments = [
            "--config", file, "--provider", "alibaba", "--resolver-url", "http://localhost:\(service.port)", "--resolver-ip", "127.0.0.1",
            "--account-id", "139450", "--system-fallback", "false", "--allow-destination", "127.0.0.0/8", "--ip-family", "ipv4",
        ]
        let proxy = try ProxyProcess.launch(arguments, environment: ["HTTPDNS_PROXY_SECRET": Self.secret])
        defer { proxy.stop() }
        let stats = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/stats", proxy: nil)
        #expect(!stats.bodyText.contains("alibabaScheduler"), "v1 has no scheduling")

        try "alibaba-api: v2\n".write(toFile: file, atomically: true, encoding: .utf8)
        let answer = try ReloadTests.reload(proxy)
        #expect(answer.status == 200, "\(answer.bodyText)")
        #expect(answer.bodyText.contains("applied to new requests: alibaba-api"), "\(answer.bodyText)")
        let response = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
        #expect(service.queryRequests.count == 1)
        // The new provider's scheduler runs: its start fetch reaches the service (polled: it
        // runs beside the query, nothing to wait on in between).
        var scheduler: [String: Any]?
        for _ in 0..<100 where scheduler?["lastResult"] as? String != "ok" {
            let stats = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/stats", proxy: nil)
            scheduler = (try JSONSerialization.jsonObject(with: stats.body) as? [String: Any])?["alibabaScheduler"] as? [String: Any]
            if scheduler?["lastResult"] as? String != "ok" { usleep(50_000) }
        }
        #expect(scheduler?["lastResult"] as? String == "ok", "\(String(describing: scheduler))")
        #expect(service.scheduleRequests.count == 1)
    }

    @Test func resolveCommandAsksSchedulingFirst() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450", secretHex: Self.secret, aesKeyHex: Self.aesKey)
        defer { service.stop() }
        service.set("www.example.test", .init(ipv4: ["192.0.2.10"], ttl: 77))
        service.setSchedule(.ips(["127.0.0.1"]))
        let run = try ResolveRun.run(["resolve", "www.example.test"] + Self.arguments(service),
                                     environment: ["HTTPDNS_PROXY_SECRET": Self.secret, "HTTPDNS_PROXY_AES_KEY": Self.aesKey])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("A         192.0.2.10"), "\(run.stdout)")
        #expect(run.stdout.contains("provider: alibaba"))
        #expect(service.scheduleRequests.count == 1)
        #expect(!run.stdout.contains(Self.secret) && !run.stderr.contains(Self.secret))
    }
}
