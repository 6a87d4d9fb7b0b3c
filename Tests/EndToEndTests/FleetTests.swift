import Foundation
import Glibc
import HTTPDNSTestSupport
import Testing

/// The node tier: one proxy holding the (fake) vendor's credentials and a warm cache, serving it
/// over `--doh-listen` to 20 per-pod proxies (`--provider doh`, `--fallback-provider json` to the
/// vendor). Each pod is asked for the same 50 names through its DNS listener over two TTLs (a TTL
/// ends by purging every cache, not by waiting). The vendor's query count with and without the
/// node tier is printed; the node tier is then killed (every pod keeps answering, from its cache,
/// then from the vendor directly) and started again (the pods return to it).
@Suite("Fleet: node tier and pod proxies", .timeLimit(.minutes(4)))
struct FleetTests {
    static let pods = 20
    static let names = (0..<50).map { String(format: "n%02d.fleet.test", $0) }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func dnsPort(_ proxy: ProxyProcess) throws -> Int {
        let entry = try #require(proxy.waitForLog(where: { $0["message"] as? String == "dns listening" }, timeout: .seconds(30)), proxy.diagnostics)
        return try #require(ProxyProcess.port(ofAddress: entry["address"] as? String ?? ""))
    }

    /// Asks every pod for every name (dnspython); returns how many answers carried the right address.
    static func askAll(_ ports: [Int]) throws -> Int {
        let script = """
            import sys, dns.message, dns.query
            good = 0
            for port in map(int, sys.argv[1:]):
                for i in range(50):
                    name = "n%02d.fleet.test" % i
                    r = dns.query.udp(dns.message.make_query(name, "A"), "127.0.0.1", port=port, timeout=10)
                    if [str(x) for rr in r.answer for x in rr] == ["198.18.0.%d" % (i + 1)]:
                        good += 1
            print(good)
            """
        let run = try ExternalTool.run(try #require(DNSListenerTests.python), ["-c", script] + ports.map(String.init), timeout: .seconds(120))
        guard run.exitCode == 0 else { throw ProxyProcess.Failure(description: run.stderr) }
        return Int(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    static func purge(_ proxies: [ProxyProcess]) throws {
        for proxy in proxies {
            _ = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/cache", proxy: nil, extra: ["-X", "DELETE"])
        }
    }

    static func launchPods(_ arguments: [String]) throws -> [ProxyProcess] {
        try (0..<pods).map { _ in
            try ProxyProcess.launch(
                arguments + ["--ip-family", "ipv4", "--system-fallback", "false", "--dns-listen", "127.0.0.1:0", "--dns-rate-limit", "0",
                             "--dns-upstream", "127.0.0.1:9"])
        }
    }

    @Test func oneVendorQueryPerNamePerTTLAndPodsSurviveTheNodeTier() throws {
        guard ExternalTool.shouldRun("python3 with dnspython", present: DNSListenerTests.hasDNSPython) else { return }
        let vendor = try FakeHTTPDNSService()
        defer { vendor.stop() }
        for (index, name) in Self.names.enumerated() { vendor.set(name, .init(ipv4: ["198.18.0.\(index + 1)"], ttl: 300)) }
        let vendorURL = "http://127.0.0.1:\(vendor.port)/resolve"
        let asked = Self.pods * Self.names.count

        // Without the node tier: every pod asks the vendor itself.
        var direct = try Self.launchPods(["--provider", "json", "--resolver-url", vendorURL])
        let directPorts = try direct.map(Self.dnsPort)
        var before = vendor.requests().count
        #expect(try Self.askAll(directPorts) == asked)
        try Self.purge(direct)
        #expect(try Self.askAll(directPorts) == asked)
        let withoutNode = vendor.requests().count - before
        for pod in direct { pod.stop() }
        direct = []

        // With it: the pods ask the node, the node asks the vendor.
        let nodePort = try Self.freePort()
        let nodeArguments = HTTPDNSResolutionTests.jsonProvider(vendor)
            + ["--ip-family", "ipv4", "--system-fallback", "false", "--doh-listen", "127.0.0.1:\(nodePort)", "--dns-rate-limit", "0"]
        var node = try ProxyProcess.launch(nodeArguments)
        defer { node.stop() }
        let pods = try Self.launchPods([
            "--provider", "doh", "--resolver-url", "http://127.0.0.1:\(nodePort)/dns-query",
            "--fallback-provider", "json", "--fallback-resolver-url", vendorURL, "--resolver-timeout", "1s",
        ])
        defer { for pod in pods { pod.stop() } }
        let ports = try pods.map(Self.dnsPort)
        before = vendor.requests().count
        #expect(try Self.askAll(ports) == asked)
        let firstTTL = vendor.requests().count - before
        try Self.purge(pods + [node])
        before = vendor.requests().count
        #expect(try Self.askAll(ports) == asked)
        let secondTTL = vendor.requests().count - before
        print("fleet: \(Self.pods) pods x \(Self.names.count) names over two TTLs: vendor queries without the node tier \(withoutNode), "
            + "with it \(firstTTL) + \(secondTTL)")
        #expect(withoutNode == 2 * asked, "every pod asks for itself without the node tier")
        #expect(firstTTL <= Self.names.count && secondTTL <= Self.names.count, "at most one vendor query per name per TTL")

        // The node tier dies: answers still come, from the pods' caches, then from the vendor.
        node.stop()
        before = vendor.requests().count
        #expect(try Self.askAll(ports) == asked, "cached answers need no node")
        #expect(vendor.requests().count == before)
        try Self.purge(pods)
        #expect(try Self.askAll(ports) == asked, "the fallback provider answers while the node is down")
        let whileDown = vendor.requests().count - before
        #expect(whileDown >= Self.names.count, "the pods asked the vendor themselves: \(whileDown)")

        // It comes back: after resolver-timeout the pods ask it first again.
        node = try ProxyProcess.launch(nodeArguments)
        var afterReturn = Int.max
        #expect(try AccessControlTests.eventually {
            try Self.purge(pods)
            let start = vendor.requests().count
            guard try Self.askAll(ports) == asked else { return false }
            afterReturn = vendor.requests().count - start
            try Self.purge([node])
            return afterReturn <= Self.names.count
        }, "the pods did not return to the node tier: \(afterReturn) vendor queries for a round")
        print("fleet: node tier down: \(whileDown) vendor queries for a round; back: \(afterReturn)")
    }
}
