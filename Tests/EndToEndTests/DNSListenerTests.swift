import Foundation
import Glibc
import Testing
import TestSupport

/// `--dns-listen` through the real binary, with dig (dnsutils) and dnspython as clients, the fake
/// HTTPDNS service behind it and a fake upstream DNS server on loopback for what it forwards.
/// `--system-fallback false` and `--dns-upstream` pointing at the fake keep every query on loopback.
@Suite("DNS listener", .onBlockingThreads, .timeLimit(.minutes(3)))
struct DNSListenerTests {
    struct Listener {
        var proxy: ProxyProcess
        var port: Int
    }

    static let dig = ChildEnvironment.which("dig")
    static let python = ChildEnvironment.which("python3")
    static let hasDNSPython: Bool = {
        guard let python else { return false }
        return (try? ExternalTool.run(python, ["-c", "import dns.message"], timeout: .seconds(20)).exitCode) == 0
    }()

    /// A proxy with the DNS listener on a free loopback port, HTTPDNS from `service`.
    static func launch(_ service: FakeHTTPDNSService, upstream: FakeDNSUpstream?, extra: [String] = []) throws -> Listener {
        let upstreamAddress = upstream.map { "127.0.0.1:\($0.port)" } ?? "127.0.0.1:9"
        let proxy = try ProxyProcess.launch(
            HTTPDNSResolutionTests.jsonProvider(service)
                + ["--system-fallback", "false", "--ip-family", "both", "--dns-listen", extra.contains("--dns-listen") ? "" : "127.0.0.1:0",
                   "--dns-upstream", upstreamAddress].filter { !$0.isEmpty }
                + extra)
        let entry = try #require(proxy.waitForLog(where: { $0["message"] as? String == "dns listening" }, timeout: .seconds(30)), proxy.diagnostics)
        let port = try #require(ProxyProcess.port(ofAddress: entry["address"] as? String ?? ""), "\(entry)")
        return Listener(proxy: proxy, port: port)
    }

    static func dig(_ port: Int, _ arguments: [String], source: String? = nil, server: String = "127.0.0.1") throws -> String {
        var all = ["@\(server)", "-p", "\(port)", "+time=5", "+tries=1"] + arguments
        if let source { all += ["-b", source] }
        return try ExternalTool.run(try #require(dig), all, timeout: .seconds(30)).stdout
    }

    /// `dig +short` lines.
    static func short(_ port: Int, _ name: String, _ type: String) throws -> [String] {
        try dig(port, ["+short", name, type]).split(separator: "\n").map(String.init)
    }

    static func status(_ output: String) -> String? {
        guard let range = output.range(of: "status: ") else { return nil }
        return String(output[range.upperBound...].prefix { $0 != "," })
    }

    @Test func addressQuestionsAreAnsweredFromTheHTTPDNSCache() async throws {
        guard ExternalTool.shouldRun("dig", present: Self.dig != nil) else { return }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["192.0.2.10", "192.0.2.11"], ipv6: ["2001:db8::10"], ttl: 300))
        service.set("v4only.test", .init(ipv4: ["192.0.2.20"], ttl: 300))
        service.setNXDOMAIN("gone.test")
        let upstream = try await FakeDNSUpstream.start()
        defer { upstream.stop() }
        let listener = try Self.launch(service, upstream: upstream, extra: ["--metrics", "true"])
        defer { listener.proxy.stop() }

        #expect(Set(try Self.short(listener.port, "origin.test", "A")) == ["192.0.2.10", "192.0.2.11"], listener.proxy.diagnostics)
        #expect(try Self.short(listener.port, "Origin.Test.", "AAAA") == ["2001:db8::10"])
        let queries = service.queryCount(for: "origin.test")
        // Again, both families: from the cache, the remaining TTL counting down from 300.
        let answer = try Self.dig(listener.port, ["+noall", "+answer", "origin.test", "A"])
        let ttls = answer.split(separator: "\n").compactMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) } }
        #expect(ttls.count == 2 && ttls.allSatisfy { $0 > 0 && $0 <= 300 }, "\(answer)")
        #expect(try Self.short(listener.port, "origin.test", "AAAA") == ["2001:db8::10"])
        #expect(service.queryCount(for: "origin.test") == queries, "cached answers must not query the service again")

        let nxdomain = try Self.dig(listener.port, ["gone.test", "A"])
        #expect(Self.status(nxdomain) == "NXDOMAIN", "\(nxdomain)")
        #expect(nxdomain.contains("SOA"), "a negative answer carries an SOA for negative caching: \(nxdomain)")
        let nodata = try Self.dig(listener.port, ["v4only.test", "AAAA"])
        #expect(Self.status(nodata) == "NOERROR", "\(nodata)")
        #expect(nodata.contains("ANSWER: 0"), "\(nodata)")
        #expect(upstream.questions.isEmpty, "A and AAAA never go upstream: \(upstream.questions)")

        let metrics = try Curl.fetch("http://127.0.0.1:\(listener.proxy.adminPort)/metrics", proxy: nil).bodyText
        #expect(metrics.contains("httpdns_proxy_dns_queries_total{qtype=\"a\",rcode=\"noerror\"} 2"), "\(metrics)")
        #expect(metrics.contains("httpdns_proxy_dns_queries_total{qtype=\"a\",rcode=\"nxdomain\"} 1"))
        #expect(metrics.contains("httpdns_proxy_dns_queries_total{qtype=\"aaaa\",rcode=\"noerror\"} 3"))
    }

    @Test func forwardedZonesAndOtherTypesGoToTheUpstream() async throws {
        guard ExternalTool.shouldRun("dig", present: Self.dig != nil) else { return }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["192.0.2.10"], ttl: 300))
        let upstream = try await FakeDNSUpstream.start()
        defer { upstream.stop() }
        let listener = try Self.launch(service, upstream: upstream, extra: ["--dns-forward-zone", "cluster.local"])
        defer { listener.proxy.stop() }

        #expect(try Self.short(listener.port, "kube-dns.kube-system.svc.cluster.local", "A") == ["10.96.0.42"], listener.proxy.diagnostics)
        #expect(try Self.dig(listener.port, ["+tcp", "+short", "api.default.svc.cluster.local", "A"]) == "10.96.0.42\n")
        #expect(try Self.short(listener.port, "origin.test", "TXT") == ["\"upstream\""])
        let nx = try Self.dig(listener.port, ["origin.test", "MX"])
        #expect(Self.status(nx) == "NXDOMAIN", "the upstream's answer is relayed: \(nx)")
        #expect(try Self.short(listener.port, "origin.test", "A") == ["192.0.2.10"])
        #expect(Set(upstream.questions) == [
            "kube-dns.kube-system.svc.cluster.local/1", "api.default.svc.cluster.local/1", "origin.test/16", "origin.test/15",
        ], "\(upstream.questions)")
        #expect(service.queryCount(for: "kube-dns.kube-system.svc.cluster.local") == 0)
    }

    @Test func aLargeAnswerIsTruncatedOverUDPAndWholeOverTCP() async throws {
        guard ExternalTool.shouldRun("dig", present: Self.dig != nil) else { return }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        let many = (1...100).map { "198.51.100.\($0)" }
        service.set("big.test", .init(ipv4: many, ttl: 300))
        let listener = try Self.launch(service, upstream: nil)
        defer { listener.proxy.stop() }

        let udpOnly = try Self.dig(listener.port, ["+ignore", "+noedns", "big.test", "A"])
        #expect(udpOnly.contains(" tc"), "TC must be set: \(udpOnly)")
        #expect(udpOnly.contains("ANSWER: 0"), "\(udpOnly)")
        // dig retries over TCP after TC, as stub resolvers do.
        let retried = try Self.dig(listener.port, ["+noall", "+answer", "big.test", "A"])
        #expect(retried.split(separator: "\n").count == 100, "\(retried)")
        let edns = try Self.dig(listener.port, ["+ignore", "+bufsize=4096", "big.test", "A"])
        #expect(edns.contains(" tc"), "1600 bytes of answers exceed the advertised 1232: \(edns)")
    }

    @Test func theClientACLRefusesOutsiders() async throws {
        guard ExternalTool.shouldRun("dig", present: Self.dig != nil) else { return }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["192.0.2.10"], ttl: 300))
        let listener = try Self.launch(service, upstream: nil, extra: ["--allow-client", "127.0.0.2/32"])
        defer { listener.proxy.stop() }
        #expect(Self.status(try Self.dig(listener.port, ["origin.test", "A"], source: "127.0.0.3")) == "REFUSED")
        #expect(try Self.dig(listener.port, ["+short", "origin.test", "A"], source: "127.0.0.2") == "192.0.2.10\n")
        // One query per family, made for the allowed client only.
        #expect(service.queryCount(for: "origin.test") == 2)
    }

    /// dnspython: a malformed query, an oversize one, a runt, and a flood from one client while
    /// another is still answered.
    @Test func malformedOversizeAndFloodingClients() async throws {
        guard ExternalTool.shouldRun("python3 with dnspython", present: Self.hasDNSPython) else { return }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["192.0.2.10"], ttl: 300))
        let listener = try Self.launch(service, upstream: nil, extra: ["--dns-rate-limit", "50"])
        defer { listener.proxy.stop() }
        let script = """
            import json, socket, sys
            import dns.message, dns.query, dns.rcode
            port = int(sys.argv[1]); out = {}
            def ask(source):
                r = dns.query.udp(dns.message.make_query("origin.test", "A"), "127.0.0.1", port=port, timeout=5, source=source)
                return " ".join([dns.rcode.to_text(r.rcode())] + [str(x) for rr in r.answer for x in rr])
            out["first"] = ask("127.0.0.3")
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5); s.bind(("127.0.0.4", 0))
            s.sendto(bytes([0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 5, 0x61]), ("127.0.0.1", port))
            d = s.recvfrom(4096)[0]; out["malformed"] = [d[0], d[1], d[2] >> 7, d[3] & 15]
            big = bytes([0x56, 0x78, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1]) + b"\\x01a\\x00\\x00\\x01\\x00\\x01" + b"\\x00\\x00\\x29\\x10\\x00\\x00\\x00\\x00\\x00\\x07\\xd0" + bytes(2000)
            s.sendto(big, ("127.0.0.1", port))
            d = s.recvfrom(4096)[0]; out["oversize"] = [d[0], d[1], d[2] >> 7, d[3] & 15]
            f = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); f.settimeout(10); f.bind(("127.0.0.5", 0))
            f.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            for i in range(400):
                q = dns.message.make_query("origin.test", "A"); q.id = i
                f.sendto(q.to_wire(), ("127.0.0.1", port))
            counts = {}
            for i in range(400):
                r = dns.message.from_wire(f.recvfrom(4096)[0])
                k = dns.rcode.to_text(r.rcode()); counts[k] = counts.get(k, 0) + 1
            out["flood"] = counts
            out["other"] = ask("127.0.0.6")
            print(json.dumps(out))
            """
        let run = try ExternalTool.run(try #require(Self.python), ["-c", script, "\(listener.port)"], timeout: .seconds(60))
        #expect(run.exitCode == 0, "\(run.stderr) \(listener.proxy.diagnostics)")
        let out = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
        #expect(out["first"] as? String == "NOERROR 192.0.2.10")
        #expect(out["malformed"] as? [Int] == [0x12, 0x34, 1, 1], "FORMERR with the ID echoed")
        #expect(out["oversize"] as? [Int] == [0x56, 0x78, 1, 1], "FORMERR with the ID echoed")
        let flood = try #require(out["flood"] as? [String: Int])
        #expect((flood["NOERROR"] ?? 0) >= 50 && (flood["NOERROR"] ?? 0) < 200, "\(flood)")
        #expect((flood["REFUSED"] ?? 0) >= 200, "\(flood)")
        #expect(out["other"] as? String == "NOERROR 192.0.2.10", "another client is still answered")
        #expect(listener.proxy.isRunning)
    }
}
