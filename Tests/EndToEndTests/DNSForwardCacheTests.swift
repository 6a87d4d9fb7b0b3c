import Foundation
import Glibc
import Testing
import TestSupport

/// The DNS listener's cache of forwarded answers through the real binary, with dig: a question
/// the listener forwards (a forward zone's name, a type HTTPDNS does not answer) reaches the
/// upstream once per TTL, whatever its type, its letter case or its transport.
@Suite("DNS listener forward cache", .onBlockingThreads, .timeLimit(.minutes(3)))
struct DNSForwardCacheTests {
    @Test func forwardedAnswersOfEveryTypeAreAskedOncePerTTL() async throws {
        guard ExternalTool.shouldRun("dig", present: DNSListenerTests.dig != nil) else { return }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        let upstream = try await FakeDNSUpstream.start()
        defer { upstream.stop() }
        let listener = try DNSListenerTests.launch(service, upstream: upstream, extra: ["--dns-forward-zone", "cluster.local"])
        defer { listener.proxy.stop() }
        let port = listener.port

        for _ in 0..<3 {
            #expect(try DNSListenerTests.short(port, "kube-dns.kube-system.svc.cluster.local", "A") == ["10.96.0.42"], listener.proxy.diagnostics)
            #expect(try DNSListenerTests.short(port, "api.svc.cluster.local", "TXT") == ["\"upstream\""])
            #expect(try DNSListenerTests.short(port, "_http._tcp.api.svc.cluster.local", "SRV") == ["10 5 8080 target.cluster.local."])
            #expect(try DNSListenerTests.short(port, "api.svc.cluster.local", "MX") == ["10 mail.cluster.local."])
            let missing = try DNSListenerTests.dig(port, ["gone.svc.cluster.local", "AAAA"])
            #expect(DNSListenerTests.status(missing) == "NXDOMAIN", "\(missing)")
        }
        // Over TCP and in another letter case: the same cached answers, the question as asked.
        #expect(try DNSListenerTests.dig(port, ["+tcp", "+short", "API.svc.Cluster.LOCAL", "TXT"]) == "\"upstream\"\n")
        let mixed = try DNSListenerTests.dig(port, ["+noall", "+question", "+answer", "Kube-DNS.kube-system.SVC.cluster.local", "A"])
        #expect(mixed.contains(";Kube-DNS.kube-system.SVC.cluster.local."), "\(mixed)")
        // A cached answer's TTL counts down from the upstream's 30 s.
        let answer = try DNSListenerTests.dig(port, ["+noall", "+answer", "api.svc.cluster.local", "TXT"])
        let ttl = answer.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
        #expect(ttl.map { $0 <= 30 && $0 > 0 } == true, "\(answer)")

        let counts = Dictionary(upstream.questions.map { ($0, 1) }, uniquingKeysWith: +)
        #expect(counts == [
            "kube-dns.kube-system.svc.cluster.local/1": 1, "api.svc.cluster.local/16": 1, "_http._tcp.api.svc.cluster.local/33": 1,
            "api.svc.cluster.local/15": 1, "gone.svc.cluster.local/28": 1,
        ], "each question once per TTL: \(upstream.questions)")

        // The admin /cache lists them; a purge of one name forgets its answers (TXT and MX), so
        // the next question goes upstream again.
        let admin = "http://127.0.0.1:\(listener.proxy.adminPort)"
        let cache = try #require(
            try JSONSerialization.jsonObject(with: try Curl.fetch(admin + "/cache", proxy: nil).body) as? [String: Any])
        let forwarded = try #require(cache["forwarded"] as? [[String: Any]], "\(cache)")
        let listed = Set(forwarded.map { "\($0["name"] ?? "?")/\($0["type"] ?? "?")" })
        #expect(listed == [
            "kube-dns.kube-system.svc.cluster.local/1", "api.svc.cluster.local/16", "_http._tcp.api.svc.cluster.local/33",
            "api.svc.cluster.local/15", "gone.svc.cluster.local/28",
        ], "\(forwarded)")
        #expect(forwarded.allSatisfy { ($0["ttl"] as? Int ?? 0) > 0 && ($0["ttl"] as? Int ?? 99) <= 30 }, "\(forwarded)")
        let purge = try Curl.fetch(admin + "/cache/purge?host=api.svc.cluster.local", proxy: nil, extra: ["-X", "POST"])
        #expect(purge.bodyText.contains("forgot 2 forwarded DNS answers"), "\(purge.bodyText)")
        #expect(try DNSListenerTests.short(port, "api.svc.cluster.local", "TXT") == ["\"upstream\""])
        #expect(upstream.questions.filter { $0 == "api.svc.cluster.local/16" }.count == 2, "\(upstream.questions)")
    }

    /// `--dns-forward-zone zone=IP:PORT`: each zone's names go to its own resolvers (a dead one
    /// first in the list is passed over), the rest to `--dns-upstream`.
    @Test func zonesGoToTheirOwnResolvers() async throws {
        guard ExternalTool.shouldRun("dig", present: DNSListenerTests.dig != nil) else { return }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        let cluster = try await FakeDNSUpstream.start()
        defer { cluster.stop() }
        let corp = try await FakeDNSUpstream.start(address: [10, 1, 0, 99])
        defer { corp.stop() }
        let listener = try DNSListenerTests.launch(
            service, upstream: cluster,
            extra: ["--dns-forward-zone", "cluster.local", "--dns-forward-zone", "corp.example=127.0.0.1:9",
                    "--dns-forward-zone", "corp.example=127.0.0.1:\(corp.port)"])
        defer { listener.proxy.stop() }
        let port = listener.port
        #expect(try DNSListenerTests.short(port, "git.corp.example", "A") == ["10.1.0.99"], listener.proxy.diagnostics)
        #expect(try DNSListenerTests.short(port, "wiki.Corp.Example", "TXT") == ["\"upstream\""])
        #expect(try DNSListenerTests.short(port, "kube-dns.kube-system.svc.cluster.local", "A") == ["10.96.0.42"])
        #expect(Set(corp.questions) == ["git.corp.example/1", "wiki.corp.example/16"], "\(corp.questions)")
        #expect(cluster.questions == ["kube-dns.kube-system.svc.cluster.local/1"], "\(cluster.questions)")
        #expect(service.queryCount(for: "git.corp.example") == 0, "a forward zone's names never reach HTTPDNS")
    }

    /// `--dns-query-log`: a JSON line per answer saying where it came from; reopened on SIGUSR1.
    @Test func theQueryLogSaysWhereEachAnswerCameFrom() async throws {
        guard ExternalTool.shouldRun("dig", present: DNSListenerTests.dig != nil) else { return }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-qlog-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("queries.log").path
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["192.0.2.10"], ttl: 300))
        let upstream = try await FakeDNSUpstream.start()
        defer { upstream.stop() }
        let listener = try DNSListenerTests.launch(
            service, upstream: upstream, extra: ["--dns-forward-zone", "cluster.local", "--dns-query-log", path, "--allow-client", "127.0.0.1/32"])
        defer { listener.proxy.stop() }
        let port = listener.port
        _ = try DNSListenerTests.short(port, "origin.test", "A")
        _ = try DNSListenerTests.short(port, "origin.test", "A")
        _ = try DNSListenerTests.short(port, "api.svc.cluster.local", "TXT")
        _ = try DNSListenerTests.dig(port, ["+tcp", "+short", "api.svc.cluster.local", "TXT"])
        _ = try DNSListenerTests.dig(port, ["origin.test", "A"], source: "127.0.0.9")

        func lines(_ path: String, count: Int) throws -> [[String: Any]] {
            var parsed: [[String: Any]] = []
            for _ in 0..<200 {
                let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
                parsed = text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                if parsed.count >= count { break }
                usleep(5_000)  // polls for the lines: the writer flushes at the end of the answering loop's tick
            }
            return parsed
        }
        let logged = try lines(path, count: 5)
        #expect(logged.map { $0["source"] as? String ?? "?" } == ["httpdns", "cache", "forward", "forward-cache", "refused"], "\(logged)")
        #expect(logged.map { $0["rcode"] as? String ?? "?" } == ["NOERROR", "NOERROR", "NOERROR", "NOERROR", "REFUSED"])
        #expect(logged.map { $0["type"] as? String ?? "?" } == ["A", "A", "TXT", "TXT", "A"])
        #expect(logged.map { $0["transport"] as? String ?? "?" } == ["udp", "udp", "udp", "tcp", "udp"])
        #expect(logged[0]["name"] as? String == "origin.test" && logged[0]["answers"] as? Int == 1)
        #expect((logged[4]["client"] as? String)?.hasPrefix("127.0.0.9:") == true, "\(logged[4])")
        #expect(logged.allSatisfy { ($0["ms"] as? Double).map { $0 >= 0 } == true && ($0["ts"] as? String)?.hasSuffix("Z") == true })

        // Rotation: moved away, SIGUSR1, the next answer goes to a new file at the path.
        try FileManager.default.moveItem(atPath: path, toPath: path + ".1")
        listener.proxy.signal(SIGUSR1)
        #expect(listener.proxy.waitForLog(where: { $0["message"] as? String == "query log reopened" }) != nil, listener.proxy.diagnostics)
        _ = try DNSListenerTests.short(port, "origin.test", "A")
        #expect(try lines(path, count: 1).first?["source"] as? String == "cache")
    }
}

