import Foundation
import Glibc
import Testing
import TestSupport

/// The real binary in a network namespace of its own, with a fake HTTPDNS service listening on
/// that namespace's loopback: adding and removing an address there is a network change, which
/// must refresh the cached names (queries reach the fake service again) and count in /stats and
/// /metrics. Nothing leaves the namespace. Root and iproute2 only; otherwise reported as skipped.
@Suite("Network change", .onBlockingThreads, .timeLimit(.minutes(2)), .serialized)
struct NetworkChangeTests {
    @Test(.enabled(if: NetworkNamespace.available, "needs root, ip (iproute2) and permission to add a network namespace"))
    func anAddressAddedOrRemovedRefreshesTheCachedNames() async throws {
        let namespace = try NetworkNamespace(name: "hp-nc-\(getpid())")
        defer { namespace.remove() }
        // A veth pair with both ends inside: an interface to put addresses on (no traffic).
        try namespace.ipHere(["link", "add", "hpnc0", "type", "veth", "peer", "name", "hpnc1"])
        try namespace.ipHere(["link", "set", "hpnc0", "up"])
        try namespace.ipHere(["link", "set", "hpnc1", "up"])

        let service = try await namespace.enter { try await FakeHTTPDNSService.start(host: "127.0.0.1") }
        defer { service.stop() }
        service.set("a.test", .init(ipv4: ["127.0.0.1"], ttl: 600))
        service.set("b.test", .init(ipv4: ["127.0.0.1"], ttl: 600))

        let proxy = try ProxyProcess.launch(
            [
                "--provider", "json", "--resolver-url", "http://127.0.0.1:\(service.port)/resolve", "--resolver-ip", "127.0.0.1",
                "--system-fallback", "false", "--ip-family", "ipv4", "--preload", "a.test,b.test",
                "--network-monitor", "true",
            ],
            launcher: namespace.launcher)
        defer { proxy.stop() }
        func queries() -> (Int, Int) { (service.queryCount(for: "a.test"), service.queryCount(for: "b.test")) }
        try #require(Self.wait { queries() == (1, 1) }, "preload: \(queries()) \(proxy.diagnostics)")

        func network() throws -> [String: Any] {
            let result = try namespace.exec(["curl", "-q", "-sS", "--max-time", "5", "http://127.0.0.1:\(proxy.adminPort)/stats"])
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            return json?["network"] as? [String: Any] ?? [:]
        }
        func shown() -> String { "\((try? network()) ?? [:])" }
        try #require(Self.wait { (try? network())?["monitor"] as? String == "netlink" }, "\(shown()) \(proxy.diagnostics)")
        #expect(try network()["changes"] as? Int == 0)
        #expect(try network()["ipv4Addresses"] as? Int == 0)

        try namespace.ipHere(["addr", "add", "10.213.7.2/24", "dev", "hpnc0"])
        #expect(Self.wait { queries() == (2, 2) }, "one refresh per cached name: \(queries()) \(proxy.diagnostics)")
        #expect(Self.wait { (try? network())?["changes"] as? Int == 1 }, "\(shown())")
        #expect(try network()["ipv4Addresses"] as? Int == 1)
        let logged = proxy.waitForLog(where: { $0["message"] as? String ?? "" == Self.changedMessage })
        #expect(logged?["network.ipv4_before"] as? String == "0" && logged?["network.ipv4_after"] as? String == "1", "\(String(describing: logged))")
        #expect(logged?["level"] as? String == "notice")

        try namespace.ipHere(["addr", "del", "10.213.7.2/24", "dev", "hpnc0"])
        #expect(Self.wait { queries() == (3, 3) }, "\(queries()) \(proxy.diagnostics)")
        #expect(Self.wait { (try? network())?["changes"] as? Int == 2 }, "\(shown())")

        let metrics = try namespace.exec(["curl", "-q", "-sS", "--max-time", "5", "http://127.0.0.1:\(proxy.adminPort)/metrics"])
        #expect(metrics.stdout.contains("\nhttpdns_proxy_network_changes_total 2"), "\(metrics.stdout)")
        #expect(metrics.stdout.contains("# HELP httpdns_proxy_network_changes_total "))
    }

    static let changedMessage = "network changed: per-IP health reset, pooled connections retired, cached names refreshing in the background"

    /// Polls `condition` every 50 ms for up to `seconds`: the proxy runs in another process.
    static func wait(seconds: Double = 15, _ condition: () throws -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if (try? condition()) == true { return true }
            usleep(50_000)
        }
        return (try? condition()) == true
    }
}
