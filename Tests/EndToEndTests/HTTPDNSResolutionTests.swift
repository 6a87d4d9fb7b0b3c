import Foundation
import Glibc
import Testing
import TestSupport

/// The proxy resolving upstream names through a fake HTTPDNS service (loopback only). Names such as
/// `origin.test` exist only in the fake service; wherever a test could make the proxy fall back to
/// system DNS for such a name, `--system-fallback false` keeps the query from ever leaving the
/// machine. Fallback tests use `localhost`, which the system answers from /etc/hosts.
@Suite("HTTPDNS resolution", .onBlockingThreads, .timeLimit(.minutes(2)))
struct HTTPDNSResolutionTests {
    /// Provider flags pointing at `service` by name (`localhost`) pinned to its loopback address.
    static func jsonProvider(_ service: FakeHTTPDNSService, pins: [String]? = nil) -> [String] {
        var arguments = ["--provider", "json", "--resolver-url", "http://localhost:\(service.port)/resolve"]
        for pin in pins ?? [service.host] { arguments += ["--resolver-ip", pin] }
        return arguments + ["--allow-destination", "127.0.0.0/8"]
    }

    /// The proxy resolving through `service` alone (no system fallback), IPv4, plus `extra`.
    static func launchOnService(_ service: FakeHTTPDNSService, _ extra: [String] = []) throws -> ProxyProcess {
        try ProxyProcess.launch(jsonProvider(service) + ["--system-fallback", "false", "--ip-family", "ipv4"] + extra)
    }

    @Test func namesResolveThroughHTTPDNSThenTheCache() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        // No pooling, so the second request has to resolve again (and must hit the cache).
        let proxy = try ProxyProcess.launch(
            Self.jsonProvider(service) + ["--system-fallback", "false", "--pool-max-idle", "0", "--ip-family", "ipv4"])
        defer { proxy.stop() }

        for expectedSource in ["httpdns", "cache"] {
            let response = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL)
            #expect(response.status == 200, "\(response.stderr) \(proxy.diagnostics)")
            #expect(response.bodyText == "hello")
            let entry = try #require(proxy.waitForAccessLog(where: { $0.string("source") == expectedSource }), proxy.diagnostics)
            #expect(entry.string("host") == "origin.test")
            #expect(entry.string("ip") == "127.0.0.1")
        }
        #expect(origin.requests().last?.headers["host"] == ["origin.test:\(origin.port)"])
        #expect(service.queryCount(for: "origin.test") == 1, "the second request must be answered from the cache")

        let stats = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/stats", proxy: nil)
        #expect(stats.status == 200)
        let json = try #require(try JSONSerialization.jsonObject(with: stats.body) as? [String: Any])
        let domains = try #require(json["domains"] as? [[String: Any]])
        let domain = try #require(domains.first { $0["name"] as? String == "origin.test" }, "\(stats.bodyText)")
        #expect(domain["queries"] as? Int == 1)
        #expect(domain["successes"] as? Int == 1)
        #expect((domain["cacheHits"] as? Int ?? 0) >= 1)

        let cache = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/cache", proxy: nil)
        #expect(cache.bodyText.contains("origin.test"))
        let purge = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/cache?host=origin.test", proxy: nil, extra: ["-X", "DELETE"])
        #expect(purge.status == 200)
        #expect(!(try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/cache", proxy: nil)).bodyText.contains("origin.test"))
    }

    @Test func aDeadFirstResolverIPFailsOverToTheNext() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        // Nothing listens on 127.0.0.66 (no test binds that address).
        let proxy = try ProxyProcess.launch(
            Self.jsonProvider(service, pins: ["127.0.0.66", "127.0.0.1"]) + ["--system-fallback", "false", "--ip-family", "ipv4"])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
        #expect(proxy.waitForAccessLog(where: { $0.string("source") == "httpdns" }) != nil, proxy.diagnostics)
    }

    @Test func resolverDownFallsBackToSystemDNS() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setBehaviour(.fail(status: 503, body: "{}"))
        let proxy = try ProxyProcess.launch(Self.jsonProvider(service) + ["--ip-family", "ipv4"])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://localhost:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("path") == "/hello" }), proxy.diagnostics)
        #expect(entry.string("source") == "system_fallback")
        #expect(service.requests().count >= 1, "HTTPDNS must be asked first")
    }

    @Test func nxdomainFromTheServiceFallsBackToSystemDNS() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setNXDOMAIN("localhost")
        let proxy = try ProxyProcess.launch(Self.jsonProvider(service) + ["--ip-family", "ipv4"])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://localhost:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
        #expect(proxy.waitForAccessLog(where: { $0.string("source") == "system_fallback" }) != nil, proxy.diagnostics)
    }

    @Test func withoutFallbackAnUnknownNameIs502WithTheReason() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setNXDOMAIN("missing.test")
        let proxy = try ProxyProcess.launch(Self.jsonProvider(service) + ["--system-fallback", "false", "--ip-family", "ipv4"])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://missing.test/", proxy: proxy.proxyURL)
        #expect(response.status == 502)
        #expect(response.bodyText.contains("missing.test"))
        #expect(response.bodyText.contains("NXDOMAIN"))
    }

    @Test func anHTTPDNSAnswerPointingAtADeniedAddressIsBlocked() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        // DNS rebinding through HTTPDNS: a public-looking name answered with loopback.
        service.set("rebind.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let proxy = try ProxyProcess.launch([
            "--provider", "json", "--resolver-url", "http://localhost:\(service.port)/resolve", "--resolver-ip", "127.0.0.1",
            "--system-fallback", "false", "--ip-family", "ipv4",
        ])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://rebind.test:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 403)
        #expect(response.bodyText.contains("loopback"))
        #expect(origin.requests().isEmpty)
    }

    @Test func signedAlibabaRequestsWorkAndTheSecretNeverReachesTheLogs() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        let secret = "Sup3r-Secret-Value-42"
        service.requireSignature(secret: secret, now: Int(Date().timeIntervalSince1970))
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let proxy = try ProxyProcess.launch(
            [
                "--provider", "alibaba", "--alibaba-api", "v1", "--resolver-url", "http://localhost:\(service.port)", "--resolver-ip", "127.0.0.1",
                "--account-id", "139450", "--system-fallback", "false", "--allow-destination", "127.0.0.0/8",
                "--ip-family", "ipv4", "--log-level", "trace",
            ],
            environment: ["HTTPDNS_PROXY_SECRET": secret])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
        #expect(service.requests().last?.path == "/139450/sign_d")
        _ = proxy.waitForAccessLog(where: { $0.string("path") == "/hello" })
        #expect(!proxy.stderrText().contains(secret))
        #expect(!proxy.stdoutText().contains(secret))
    }

    @Test func wrongSecretIsLoggedOnceAndFallsBack() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.requireSignature(secret: "the-right-one", now: Int(Date().timeIntervalSince1970))
        let proxy = try ProxyProcess.launch(
            [
                "--provider", "alibaba", "--alibaba-api", "v1", "--resolver-url", "http://localhost:\(service.port)", "--resolver-ip", "127.0.0.1",
                "--account-id", "139450", "--secret", "a-wrong-one", "--allow-destination", "127.0.0.0/8",
                "--ip-family", "ipv4", "--pool-max-idle", "0",
            ])
        defer { proxy.stop() }
        for path in ["/hello", "/hello?again"] {
            let response = try Curl.fetch("http://localhost:\(origin.port)\(path)", proxy: proxy.proxyURL)
            #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
        }
        _ = proxy.waitForAccessLogs(count: 2, where: { $0.string("source") == "system_fallback" })
        let complaints = proxy.logEntries().filter { ($0["message"] as? String)?.contains("rejected our requests") ?? false }
        #expect(complaints.count == 1, proxy.diagnostics)
        #expect(proxy.stderrText().contains("InvalidSignature"))
        #expect(!proxy.stderrText().contains("a-wrong-one"))
    }

    @Test(arguments: ["get", "post"])
    func dohWireProvider(method: String) async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setCNAME("www.origin.test", to: "edge.origin.test")
        service.set("edge.origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let proxy = try ProxyProcess.launch([
            "--provider", "doh", "--doh-method", method, "--resolver-url", "http://localhost:\(service.port)/dns-query",
            "--resolver-ip", "127.0.0.1", "--system-fallback", "false", "--allow-destination", "127.0.0.0/8", "--ip-family", "ipv4",
        ])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://www.origin.test:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
        #expect(service.requests().contains { $0.method == method.uppercased() && $0.path == "/dns-query" })
    }

    @Test func staticListProvider() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setStaticList(#"{"service":"e2e","enable":1,"domainlist":[{"domain":"listed.test","ips":["127.0.0.1"]}]}"#)
        let proxy = try ProxyProcess.launch([
            "--provider", "static", "--static-list", "http://localhost:\(service.port)/static.json", "--resolver-ip", "127.0.0.1",
            "--system-fallback", "false", "--allow-destination", "127.0.0.0/8", "--ip-family", "ipv4",
        ])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://listed.test:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.bodyText) \(proxy.diagnostics)")
    }

    @Test func resolveCommandPrintsTheAnswer() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("www.example.test", .init(ipv4: ["192.0.2.10"], ipv6: ["2001:db8::10"], ttl: 77))
        let ok = try ResolveRun.run(["resolve", "www.example.test"] + Self.jsonProvider(service) + ["--ip-family", "both"])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("A         192.0.2.10"), "\(ok.stdout)")
        #expect(ok.stdout.contains("AAAA      2001:db8::10"))
        #expect(ok.stdout.contains("ttl:      77 s"))
        #expect(ok.stdout.contains("server:   127.0.0.1"))
        #expect(ok.stdout.contains("provider: json"))

        service.setNXDOMAIN("gone.test")
        let failed = try ResolveRun.run(["resolve", "gone.test"] + Self.jsonProvider(service) + ["--ip-family", "ipv4"])
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("nxdomain"), "\(failed.stderr)")
    }
}

/// Runs the binary to completion (for subcommands), capturing its output through temp files.
enum ResolveRun {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(20)) throws -> Output {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outPath = directory.appendingPathComponent("out").path
        let errPath = directory.appendingPathComponent("err").path
        let out = try ChildProcess.open(outPath, flags: O_WRONLY | O_CREAT | O_TRUNC)
        let err = try ChildProcess.open(errPath, flags: O_WRONLY | O_CREAT | O_TRUNC)
        let devNull = try ChildProcess.open("/dev/null", flags: O_RDONLY)
        defer { for fd in [out, err, devNull] { Glibc.close(fd) } }
        let child = try ChildProcess(
            executable: try ProxyProcess.binaryURL().path,
            arguments: arguments,
            environment: ChildEnvironment.make(overrides: environment),
            stdin: devNull, stdout: out, stderr: err)
        guard let status = child.waitForExit(timeout: timeout) else {
            child.stop()
            throw ChildProcess.Failure(description: "timed out: \(arguments)")
        }
        return Output(
            status: status,
            stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }
}
