import Foundation
import Glibc
import Testing
import TestSupport

/// `--system-dns-domain`: internal names (under a suffix, or single-label) are resolved by the
/// system resolver only; the fake HTTPDNS service must never see them, while other names still go
/// to it. The system resolver is only asked for names /etc/hosts answers: `localhost`, or, as
/// root, names in a private /etc/hosts (with `hosts: files`) in a mount namespace of the proxy's own.
@Suite("System DNS domains", .onBlockingThreads, .timeLimit(.minutes(1)))
struct SystemDNSDomainTests {
    static func askedNames(_ service: FakeHTTPDNSService) -> [String] {
        service.requests().compactMap { $0.query["name"]?.lowercased() }
    }

    @Test func aSingleLabelNameGoesToTheSystemResolverOnlyOtherNamesToHTTPDNS() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        service.set("localhost", .init(ipv4: ["127.0.0.66"], ttl: 300))  // would fail to connect if used
        // No fallback: a system answer for localhost can only come from the system-only rule.
        let proxy = try ProxyProcess.launch(
            HTTPDNSResolutionTests.jsonProvider(service) + ["--system-fallback", "false", "--ip-family", "ipv4", "--system-dns-domain", "cluster.local"])
        defer { proxy.stop() }

        let local = try Curl.fetch("http://localhost:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(local.status == 200, "\(local.bodyText) \(proxy.diagnostics)")
        let localEntry = try #require(proxy.waitForAccessLog(where: { $0.string("host") == "localhost" }), proxy.diagnostics)
        #expect(localEntry.string("source") == "system")
        let normal = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(normal.status == 200, "\(normal.bodyText) \(proxy.diagnostics)")
        #expect(proxy.waitForAccessLog(where: { $0.string("host") == "origin.test" })?.string("source") == "httpdns")
        #expect(Self.askedNames(service) == ["origin.test"], "the service saw: \(Self.askedNames(service))")
    }

    /// Without the option nothing changes: `localhost` is asked of HTTPDNS first (the fallback test's premise).
    @Test func withoutTheOptionSingleLabelNamesStillGoToHTTPDNS() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("localhost", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let proxy = try ProxyProcess.launch(HTTPDNSResolutionTests.jsonProvider(service) + ["--system-fallback", "false", "--ip-family", "ipv4"])
        defer { proxy.stop() }
        #expect(try Curl.fetch("http://localhost:\(origin.port)/hello", proxy: proxy.proxyURL).status == 200)
        #expect(Self.askedNames(service) == ["localhost"])
    }

    // Needs root (a private mount namespace) and unshare: skipped, and reported as skipped, otherwise.
    @Test(.enabled(if: ExternalTool.isRoot && ChildEnvironment.which("unshare") != nil, "needs root and unshare"))
    func namesUnderTheSuffixesNeverReachTheHTTPDNSService() async throws {
        let unshare = try #require(ChildEnvironment.which("unshare"))
        let hosts = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-hosts-\(UUID().uuidString)")
        let nsswitch = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-nsswitch-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: hosts)
            try? FileManager.default.removeItem(at: nsswitch)
        }
        // `hosts: files`: a name missing from the private file fails without a DNS query.
        try "hosts: files\n".write(to: nsswitch, atomically: true, encoding: .utf8)
        try """
            127.0.0.1 localhost
            127.0.0.1 my-svc.my-ns.svc.cluster.local
            127.0.0.1 db.corp.internal

            """.write(to: hosts, atomically: true, encoding: .utf8)
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        service.set("my-svc.my-ns.svc.cluster.local", .init(ipv4: ["127.0.0.66"], ttl: 300))
        service.set("db.corp.internal", .init(ipv4: ["127.0.0.66"], ttl: 300))
        let script = "mount --bind \"$0\" /etc/hosts && mount --bind \"$1\" /etc/nsswitch.conf && shift && exec \"$@\""
        let launcher = [unshare, "-m", "--propagation", "private", "sh", "-c", script, hosts.path, nsswitch.path]
        // From the environment, as the Kubernetes manifests set it.
        let proxy = try ProxyProcess.launch(
            HTTPDNSResolutionTests.jsonProvider(service) + ["--system-fallback", "false", "--ip-family", "ipv4"],
            environment: ["HTTPDNS_PROXY_SYSTEM_DNS_DOMAIN": "cluster.local,.internal"], launcher: launcher)
        defer { proxy.stop() }

        for name in ["my-svc.my-ns.svc.cluster.local", "db.corp.internal"] {
            let response = try Curl.fetch("http://\(name):\(origin.port)/hello", proxy: proxy.proxyURL)
            #expect(response.status == 200, "\(name): \(response.bodyText) \(proxy.diagnostics)")
            #expect(proxy.waitForAccessLog(where: { $0.string("host") == name })?.string("source") == "system", proxy.diagnostics)
        }
        // A single-label name the system resolver cannot answer: 502, and still not asked of HTTPDNS.
        #expect(try Curl.fetch("http://my-svc:\(origin.port)/hello", proxy: proxy.proxyURL).status == 502)
        #expect(try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL).status == 200)
        #expect(Self.askedNames(service) == ["origin.test"], "the service saw: \(Self.askedNames(service))")
    }
}
