import Foundation
import Glibc
import Testing
import TestSupport

/// `--compare-system-dns` through the real binary. The system resolver is only ever asked for names
/// /etc/hosts answers: `localhost`, or, as root, names in a private /etc/hosts bind-mounted in a
/// mount namespace of the proxy's own (`unshare -m`). Everything else stays in the fake service.
@Suite("Hijack detection (system DNS audit)", .onBlockingThreads, .timeLimit(.minutes(2)))
struct HijackDetectionTests {
    static func admin(_ proxy: ProxyProcess, _ path: String) throws -> Curl.Response {
        try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)\(path)", proxy: nil)
    }

    static func audit(_ proxy: ProxyProcess) throws -> [String: Any] {
        let response = try admin(proxy, "/audit")
        #expect(response.status == 200, "\(response.bodyText)")
        return try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
    }

    static func domainStats(_ proxy: ProxyProcess, _ name: String) throws -> [String: Any]? {
        let json = try JSONSerialization.jsonObject(with: admin(proxy, "/stats").body) as? [String: Any]
        return (json?["domains"] as? [[String: Any]])?.first { $0["name"] as? String == name }
    }

    /// Makes the proxy ask HTTPDNS for `host` (admin `/resolve`), which feeds the audit.
    static func resolve(_ proxy: ProxyProcess, _ host: String) throws {
        let response = try admin(proxy, "/resolve?host=\(host)")
        #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
    }

    static func auditArguments(_ service: FakeHTTPDNSService) -> [String] {
        HTTPDNSResolutionTests.jsonProvider(service) + ["--compare-system-dns", "--ip-family", "ipv4"]
    }

    @Test func aNameHTTPDNSAnswersDifferentlyFromEtcHostsIsADisagreement() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        // /etc/hosts says 127.0.0.1 (and maybe ::1); the "trusted" service says 127.0.0.2.
        service.set("localhost", .init(ipv4: ["127.0.0.2"], ttl: 300))
        let proxy = try ProxyProcess.launch(Self.auditArguments(service))
        defer { proxy.stop() }
        try Self.resolve(proxy, "localhost")

        var report: [String: Any] = [:]
        #expect(try AccessControlTests.eventually {
            report = try Self.audit(proxy)
            return (report["comparisons"] as? Int ?? 0) >= 1
        }, "\(report) \(proxy.diagnostics)")
        #expect(report["disagreements"] as? Int == 1, "\(report)")
        let recent = try #require(report["recent"] as? [[String: Any]])
        let entry = try #require(recent.first, "\(report)")
        #expect(entry["host"] as? String == "localhost")
        #expect(entry["kind"] as? String == "mismatch")
        #expect(entry["httpdns"] as? [String] == ["127.0.0.2"])
        #expect((entry["system"] as? [String])?.contains("127.0.0.1") == true, "\(entry)")
        #expect((entry["at"] as? String)?.hasSuffix("Z") == true)

        let metrics = try MetricsTests.scrape(proxy)
        #expect(metrics.samples["httpdns_proxy_system_dns_disagreements_total{kind=\"mismatch\"}"] == 1, "\(metrics.text)")
        #expect(metrics.samples["httpdns_proxy_system_dns_comparisons_total"] == 1)
        #expect(metrics.text.contains("# HELP httpdns_proxy_system_dns_disagreements_total "))
        let stats = try #require(try Self.domainStats(proxy, "localhost"))
        #expect(stats["systemChecks"] as? Int == 1)
        #expect(stats["systemDisagreements"] as? Int == 1)
        #expect(proxy.waitForLog(where: { $0["message"] as? String == "system DNS disagrees with HTTPDNS" }) != nil, proxy.diagnostics)

        // A second lookup within the TTL is answered by the cache: no second comparison.
        service.set("localhost", .init(ipv4: ["127.0.0.3"], ttl: 300))
        try Self.resolve(proxy, "localhost")
        #expect(try Self.audit(proxy)["comparisons"] as? Int == 1)
    }

    @Test func aNameWhoseAnswersAgreeIsNoDisagreement() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("localhost", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let proxy = try ProxyProcess.launch(Self.auditArguments(service))
        defer { proxy.stop() }
        try Self.resolve(proxy, "localhost")

        var report: [String: Any] = [:]
        #expect(try AccessControlTests.eventually {
            report = try Self.audit(proxy)
            return (report["comparisons"] as? Int ?? 0) >= 1
        }, "\(report) \(proxy.diagnostics)")
        #expect(report["disagreements"] as? Int == 0, "\(report)")
        #expect((report["recent"] as? [Any])?.isEmpty == true)
        let metrics = try MetricsTests.scrape(proxy)
        #expect(metrics.samples["httpdns_proxy_system_dns_disagreements_total{kind=\"mismatch\"}"] == 0, "\(metrics.text)")
        #expect(try Self.domainStats(proxy, "localhost")?["systemDisagreements"] as? Int == 0)
    }

    @Test func withoutTheOptionThereIsNoAuditAndNoSystemLookup() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("localhost", .init(ipv4: ["127.0.0.2"], ttl: 300))
        let proxy = try ProxyProcess.launch(HTTPDNSResolutionTests.jsonProvider(service) + ["--ip-family", "ipv4"])
        defer { proxy.stop() }
        try Self.resolve(proxy, "localhost")
        #expect(try Self.admin(proxy, "/audit").status == 404)
        #expect(try Self.domainStats(proxy, "localhost")?["systemChecks"] as? Int == 0)
    }

    @Test(.enabled(if: ExternalTool.shouldRun("chromium (apt-get install chromium)", present: ExternalTool.chromium != nil)))
    func theAdminPageListsDisagreements() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("localhost", .init(ipv4: ["127.0.0.2"], ttl: 300))
        let proxy = try ProxyProcess.launch(Self.auditArguments(service))
        defer { proxy.stop() }
        try Self.resolve(proxy, "localhost")
        #expect(try AccessControlTests.eventually { (try Self.audit(proxy)["disagreements"] as? Int ?? 0) >= 1 }, proxy.diagnostics)

        let dom = try HeadlessChromium.dumpDOM("http://127.0.0.1:\(proxy.adminPort)/", screenshot: nil)
        let row = try #require(
            AdminPageTests.element(in: dom, from: "<tr data-audit-host=\"localhost\"", to: "</tr>"), "no audit row in:\n\(dom.prefix(4000))")
        #expect(row.contains(">mismatch<"), "\(row)")
        #expect(row.contains("127.0.0.2"), "\(row)")
        #expect(!dom.contains("<section id=\"audit-section\" hidden"), "the audit section must be shown")
    }

    /// As root: the proxy runs in its own mount namespace whose /etc/hosts lies about a name, and
    /// whose /etc/nsswitch.conf says `hosts: files`, so a name missing from that file fails in the
    /// system resolver without any DNS query leaving the machine.
    // Needs root (a private mount namespace) and unshare: skipped, and reported as skipped, otherwise.
    @Test(.enabled(if: ExternalTool.isRoot && ChildEnvironment.which("unshare") != nil, "needs root and unshare"))
    func aLyingEtcHostsInAPrivateMountNamespaceIsCaught() async throws {
        let unshare = try #require(ChildEnvironment.which("unshare"))
        let hosts = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-hosts-\(UUID().uuidString)")
        let nsswitch = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-nsswitch-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: hosts)
            try? FileManager.default.removeItem(at: nsswitch)
        }
        try "hosts: files\n".write(to: nsswitch, atomically: true, encoding: .utf8)
        try """
            127.0.0.1 localhost
            127.0.0.66 hijacked.test
            127.0.0.5 honest.test

            """.write(to: hosts, atomically: true, encoding: .utf8)
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("hijacked.test", .init(ipv4: ["127.0.0.5"], ttl: 300))
        service.set("honest.test", .init(ipv4: ["127.0.0.5"], ttl: 300))
        // Not in the private /etc/hosts: the system resolver has no answer (NXDOMAIN injection).
        service.set("blocked.test", .init(ipv4: ["127.0.0.5"], ttl: 300))
        // Private propagation (unshare's default): the bind mount never reaches the host's /etc/hosts.
        let script = "mount --bind \"$0\" /etc/hosts && mount --bind \"$1\" /etc/nsswitch.conf && shift && exec \"$@\""
        let launcher = [unshare, "-m", "--propagation", "private", "sh", "-c", script, hosts.path, nsswitch.path]
        let proxy = try ProxyProcess.launch(Self.auditArguments(service) + ["--compare-rate", "100"], launcher: launcher)
        defer { proxy.stop() }
        try Self.resolve(proxy, "hijacked.test")
        try Self.resolve(proxy, "honest.test")
        try Self.resolve(proxy, "blocked.test")

        var report: [String: Any] = [:]
        #expect(try AccessControlTests.eventually {
            report = try Self.audit(proxy)
            return (report["comparisons"] as? Int ?? 0) >= 3
        }, "\(report) \(proxy.diagnostics)")
        let recent = try #require(report["recent"] as? [[String: Any]])
        #expect(recent.count == 2, "\(report)")
        let hijacked = try #require(recent.first { $0["host"] as? String == "hijacked.test" }, "\(report)")
        #expect(hijacked["kind"] as? String == "mismatch")
        #expect(hijacked["system"] as? [String] == ["127.0.0.66"])
        #expect(hijacked["httpdns"] as? [String] == ["127.0.0.5"])
        let blocked = try #require(recent.first { $0["host"] as? String == "blocked.test" }, "\(report)")
        #expect(blocked["kind"] as? String == "system_no_answer")
        #expect(blocked["system"] as? [String] == [])
        #expect((blocked["systemError"] as? String)?.isEmpty == false, "\(blocked)")
        let metrics = try MetricsTests.scrape(proxy).samples
        #expect(metrics["httpdns_proxy_system_dns_disagreements_total{kind=\"system_no_answer\"}"] == 1, "\(metrics)")
        #expect(try Self.domainStats(proxy, "honest.test")?["systemDisagreements"] as? Int == 0)
        #expect(!(try String(contentsOfFile: "/etc/hosts", encoding: .utf8)).contains("hijacked.test"), "the test's hosts file leaked")
    }
}
