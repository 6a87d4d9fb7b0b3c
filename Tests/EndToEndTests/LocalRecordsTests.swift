import Foundation
import Glibc
import Testing
import TestSupport

/// `--hosts-file` through the real binary: the DNS listener (dig) and the proxy's own dials (curl)
/// answer the file's names from the file while the fake HTTPDNS service answers them otherwise;
/// the query log and the access log say `local`; SIGHUP and `POST /reload` read the file again,
/// a bad file keeps the previous records. Every address is on loopback; `--system-fallback false`.
@Suite("Local records", .timeLimit(.minutes(3)))
struct LocalRecordsTests {
    static func temporaryFile(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("e2e-\(name)-\(UUID().uuidString)").path
    }

    /// The query log's lines once there are `count` of them (the writer flushes per loop tick).
    static func queryLog(_ path: String, count: Int) -> [[String: Any]] {
        var parsed: [[String: Any]] = []
        for _ in 0..<200 {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            parsed = text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            if parsed.count >= count { break }
            usleep(5_000)  // polls for the lines written by the child process
        }
        return parsed
    }

    @Test func theDNSListenerAnswersTheFilesNamesBeforeHTTPDNS() async throws {
        guard ExternalTool.shouldRun("dig", present: DNSListenerTests.dig != nil) else { return }
        let hosts = Self.temporaryFile("hosts")
        let log = Self.temporaryFile("queries")
        defer { unlink(hosts); unlink(log) }
        try "# local names\n127.0.0.1 origin.test\tAlias.Test\r\n127.0.0.5 origin.test\n".write(toFile: hosts, atomically: true, encoding: .utf8)
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["192.0.2.10"], ipv6: ["2001:db8::10"], ttl: 300))
        service.set("other.test", .init(ipv4: ["192.0.2.20"], ttl: 300))
        let upstream = try await FakeDNSUpstream.start()
        defer { upstream.stop() }
        let listener = try DNSListenerTests.launch(service, upstream: upstream, extra: ["--hosts-file", hosts, "--dns-query-log", log])
        defer { listener.proxy.stop() }
        let port = listener.port

        #expect(try DNSListenerTests.short(port, "origin.test", "A") == ["127.0.0.1", "127.0.0.5"], listener.proxy.diagnostics)
        #expect(try DNSListenerTests.short(port, "alias.test.", "A") == ["127.0.0.1"])
        let full = try DNSListenerTests.dig(port, ["+noall", "+answer", "+comments", "origin.test", "A"])
        #expect(full.contains(" aa"), "an answer from the file is authoritative: \(full)")
        #expect(full.contains("\t0\tIN\tA\t127.0.0.1"), "TTL 0: \(full)")
        // The file gives no IPv6 address: NODATA, neither the HTTPDNS answer nor forwarded.
        let nodata = try DNSListenerTests.dig(port, ["origin.test", "AAAA"])
        #expect(DNSListenerTests.status(nodata) == "NOERROR" && nodata.contains("ANSWER: 0"), "\(nodata)")
        let mx = try DNSListenerTests.dig(port, ["origin.test", "MX"])
        #expect(DNSListenerTests.status(mx) == "NOERROR" && mx.contains("ANSWER: 0"), "\(mx)")
        #expect(service.queryCount(for: "origin.test") == 0, "the file's names never reach HTTPDNS")
        #expect(upstream.questions.isEmpty, "\(upstream.questions)")
        #expect(try DNSListenerTests.short(port, "other.test", "A") == ["192.0.2.20"])

        let logged = Self.queryLog(log, count: 6)
        #expect(logged.map { $0["source"] as? String ?? "?" } == ["local", "local", "local", "local", "local", "httpdns"], "\(logged)")
        #expect(logged.first?["answers"] as? Int == 2)

        // Edited: origin.test leaves the file, other.test joins it; SIGHUP swaps the records.
        try "127.0.0.7 other.test\n".write(toFile: hosts, atomically: true, encoding: .utf8)
        listener.proxy.signal(SIGHUP)
        let reloaded = try #require(
            listener.proxy.waitForLog(where: { ($0["result"] as? String)?.contains("hosts file \(hosts) read again: 1 names") == true }),
            listener.proxy.diagnostics)
        #expect(reloaded["trigger"] as? String == "SIGHUP")
        #expect(try DNSListenerTests.short(port, "other.test", "A") == ["127.0.0.7"])
        #expect(try DNSListenerTests.short(port, "origin.test", "A") == ["192.0.2.10"])

        // A bad file: the reload fails naming the line, the previous records stay.
        try "127.0.0.8 other.test\n127.0.0.300 broken.test\n".write(toFile: hosts, atomically: true, encoding: .utf8)
        listener.proxy.signal(SIGHUP)
        let failed = try #require(
            listener.proxy.waitForLog(where: { $0["message"] as? String == "configuration reload failed; the running configuration stays" }),
            listener.proxy.diagnostics)
        #expect((failed["error"] as? String)?.contains("hosts file \(hosts): line 2: '127.0.0.300' is not an IP address") == true, "\(failed)")
        #expect(try DNSListenerTests.short(port, "other.test", "A") == ["127.0.0.7"])
    }

    @Test func theProxyDialsTheFilesAddressForItsNames() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let hosts = Self.temporaryFile("hosts")
        defer { unlink(hosts) }
        try "127.0.0.1 origin.test\n".write(toFile: hosts, atomically: true, encoding: .utf8)
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        // HTTPDNS would send origin.test where nothing listens; the file wins.
        service.set("origin.test", .init(ipv4: ["127.0.0.2"], ttl: 300))
        service.set("moved.test", .init(ipv4: ["127.0.0.2"], ttl: 300))
        let proxy = try ProxyProcess.launch(
            HTTPDNSResolutionTests.jsonProvider(service) + ["--system-fallback", "false", "--ip-family", "ipv4", "--hosts-file", hosts])
        defer { proxy.stop() }

        #expect(try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL).status == 200, proxy.diagnostics)
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("host") == "origin.test" }), proxy.diagnostics)
        #expect(entry.string("source") == "local", "\(entry)")
        #expect(service.queryCount(for: "origin.test") == 0)
        let resolved = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/resolve?host=origin.test", proxy: nil).bodyText
        let body = try JSONSerialization.jsonObject(with: Data(resolved.utf8)) as? [String: Any]
        #expect(body?["source"] as? String == "local" && body?["addresses"] as? [String] == ["127.0.0.1"], "\(resolved)")

        // POST /reload reads the edited file: moved.test now dials the origin too.
        try "127.0.0.1 origin.test moved.test\n".write(toFile: hosts, atomically: true, encoding: .utf8)
        let reload = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/reload", proxy: nil, extra: ["-X", "POST"])
        #expect(reload.status == 200 && reload.bodyText.contains("hosts file \(hosts) read again: 2 names"), "\(reload.bodyText)")
        #expect(try Curl.fetch("http://moved.test:\(origin.port)/hello", proxy: proxy.proxyURL).status == 200, proxy.diagnostics)
    }

    @Test func aBadFileStopsTheStartNamingTheLine() throws {
        let hosts = Self.temporaryFile("hosts")
        defer { unlink(hosts) }
        try "127.0.0.1 good.test\nfe80::1%eth0 zoned.test\n".write(toFile: hosts, atomically: true, encoding: .utf8)
        let result = try ExternalTool.run(
            try ProxyProcess.binaryURL().path,
            ["--provider", "system", "--hosts-file", hosts, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"],
            timeout: .seconds(30))
        #expect(result.exitCode == 64, "\(result.stderr)")
        #expect(result.stderr.contains("hosts file \(hosts): line 2: 'fe80::1%eth0' is not an IP address"), "\(result.stderr)")
    }
}
