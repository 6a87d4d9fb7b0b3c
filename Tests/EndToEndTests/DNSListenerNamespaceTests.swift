import Foundation
import Glibc
import Testing
import TestSupport

/// A real program's getaddrinfo, in a private mount namespace whose /etc/resolv.conf names the DNS
/// listener, gets HTTPDNS's answer for a name the "system DNS" (a fake upstream on loopback that
/// answers every name with 10.96.0.42) would lie about; a forwarded zone still gets the upstream's.
@Suite("DNS listener and getaddrinfo", .onBlockingThreads, .timeLimit(.minutes(2)))
struct DNSListenerNamespaceTests {
    // Needs root (a mount namespace, port 53) with unshare and getent: skipped, and reported as
    // skipped, otherwise.
    @Test(.enabled(if: ExternalTool.isRoot && ChildEnvironment.which("unshare") != nil && ChildEnvironment.which("getent") != nil,
                   "needs root, unshare and getent"))
    func getaddrinfoInAPrivateMountNamespaceUsesTheListener() async throws {
        let unshare = try #require(ChildEnvironment.which("unshare"))
        let getent = try #require(ChildEnvironment.which("getent"))
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("lied-about.test", .init(ipv4: ["192.0.2.77"], ttl: 300))
        let upstream = try await FakeDNSUpstream.start()
        defer { upstream.stop() }
        // resolv.conf cannot name a port: the listener takes port 53 on an otherwise unused loopback address.
        let address = "127.0.0.77"
        let proxy = try ProxyProcess.launch(
            HTTPDNSResolutionTests.jsonProvider(service)
                + ["--system-fallback", "false", "--ip-family", "ipv4", "--dns-listen", "\(address):53",
                   "--dns-upstream", "127.0.0.1:\(upstream.port)", "--dns-forward-zone", "cluster.local"])
        defer { proxy.stop() }
        #expect(proxy.waitForLog(where: { $0["message"] as? String == "dns listening" }, timeout: .seconds(30)) != nil, proxy.diagnostics)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-resolv-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let resolv = directory.appendingPathComponent("resolv.conf")
        let nsswitch = directory.appendingPathComponent("nsswitch.conf")
        let hosts = directory.appendingPathComponent("hosts")
        try "nameserver \(address)\noptions attempts:1 timeout:3\n".write(to: resolv, atomically: true, encoding: .utf8)
        try "hosts: files dns\n".write(to: nsswitch, atomically: true, encoding: .utf8)
        try "127.0.0.1 localhost\n".write(to: hosts, atomically: true, encoding: .utf8)
        let script = """
            mount --bind "$0" /etc/resolv.conf && mount --bind "$1" /etc/nsswitch.conf && mount --bind "$2" /etc/hosts \
            && "$3" ahostsv4 lied-about.test && "$3" ahostsv4 api.default.svc.cluster.local
            """
        let run = try ExternalTool.run(
            unshare, ["-m", "--propagation", "private", "sh", "-c", script, resolv.path, nsswitch.path, hosts.path, getent],
            timeout: .seconds(30))
        #expect(run.exitCode == 0, "\(run.stdout) \(run.stderr) \(proxy.diagnostics)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.first { $0.contains("lied-about.test") }?.hasPrefix("192.0.2.77") == true, "\(run.stdout)")
        #expect(lines.contains { $0.hasPrefix("10.96.0.42") && $0.contains("cluster.local") }, "\(run.stdout)")
        #expect(!upstream.questions.contains { $0.hasPrefix("lied-about.test") }, "\(upstream.questions)")
        #expect(service.queryCount(for: "lied-about.test") >= 1)
    }
}
