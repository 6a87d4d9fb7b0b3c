import Foundation
import Glibc
import Testing
import TestSupport

/// `--probe-domains` through the real binary: the fake HTTPDNS service answers [dead, live] for a
/// probe domain; once the answer is probed, the first proxied request goes straight to the live
/// address (no refused connect attempt at all).
@Suite("Address probing", .onBlockingThreads, .timeLimit(.minutes(2)))
struct AddressProbingTests {
    @Test func theFirstRequestAfterProbingGoesStraightToTheLiveAddress() async throws {
        // The origin listens on 127.0.0.2; nothing listens on 127.0.0.3 at that port.
        let origin = try await TestOrigin.start(host: "127.0.0.2")
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("ranked.test", .init(ipv4: ["127.0.0.3", "127.0.0.2"], ttl: 300))
        let proxy = try ProxyProcess.launch(
            HTTPDNSResolutionTests.jsonProvider(service) + [
                "--system-fallback", "false", "--ip-family", "ipv4", "--probe-domains", "ranked.test:\(origin.port)",
                "--preload", "ranked.test",
            ])
        defer { proxy.stop() }

        // The preload's answer is probed in the background: wait until both endpoints are known.
        var ips: [[String: Any]] = []
        #expect(try AccessControlTests.eventually {
            let body = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/health/ips", proxy: nil).body
            ips = (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["ips"] as? [[String: Any]] ?? []
            return ips.count == 2
        }, "\(ips) \(proxy.diagnostics)")
        let dead = try #require(ips.first { $0["ip"] as? String == "127.0.0.3" })
        #expect(dead["state"] as? String == "backoff")
        #expect(dead["lastFailure"] as? String == "refused")
        let live = try #require(ips.first { $0["ip"] as? String == "127.0.0.2" })
        #expect(live["successes"] as? Int == 1)

        let response = try Curl.fetch("http://ranked.test:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("path") == "/hello" }), proxy.diagnostics)
        #expect(entry.string("ip") == "127.0.0.2")
        let metrics = try MetricsTests.scrape(proxy).samples
        // The real request never tried the dead address: its only connect attempt succeeded.
        #expect(metrics["httpdns_proxy_upstream_connect_attempts_total{family=\"ipv4\",result=\"refused\"}"] ?? 0 == 0, "\(metrics)")
        #expect(metrics["httpdns_proxy_upstream_connect_attempts_total{family=\"ipv4\",result=\"ok\"}"] == 1)
        #expect(metrics["httpdns_proxy_address_probes_total{result=\"refused\"}"] == 1)
        #expect(metrics["httpdns_proxy_address_probes_total{result=\"ok\"}"] == 1)
        #expect(service.queryCount(for: "ranked.test") == 1)
    }

    @Test func withoutProbingTheFirstRequestLearnsFromARefusedConnect() async throws {
        // The control: same answer, no --probe-domains; the dead address is dialed first.
        let origin = try await TestOrigin.start(host: "127.0.0.2")
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("ranked.test", .init(ipv4: ["127.0.0.3", "127.0.0.2"], ttl: 300))
        let proxy = try ProxyProcess.launch(
            HTTPDNSResolutionTests.jsonProvider(service) + ["--system-fallback", "false", "--ip-family", "ipv4", "--preload", "ranked.test"])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://ranked.test:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
        let metrics = try MetricsTests.scrape(proxy).samples
        #expect(metrics["httpdns_proxy_upstream_connect_attempts_total{family=\"ipv4\",result=\"refused\"}"] == 1, "\(metrics)")
        #expect(metrics["httpdns_proxy_address_probes_total{result=\"ok\"}"] ?? 0 == 0)
    }
}
