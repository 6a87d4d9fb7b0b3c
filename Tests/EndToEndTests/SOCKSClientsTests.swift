import Foundation
import Testing
import TestSupport

/// Real SOCKS clients other than curl on the proxy's own (mixed) port, each asking for a name that
/// only the fake HTTPDNS service knows (`--system-fallback false`): Python's requests with
/// `socks5h://`, and headless Chromium with `--proxy-server=socks5://` while its own resolver
/// maps every name to "not found".
@Suite("SOCKS clients", .onBlockingThreads, .timeLimit(.minutes(3)))
struct SOCKSClientsTests {
    static func fixture() async throws -> (TestOrigin, FakeHTTPDNSService, ProxyProcess) {
        let origin = try await TestOrigin.start()
        let service = try await FakeHTTPDNSService.start()
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let proxy = try HTTPDNSResolutionTests.launchOnService(service, ["--connect-ports", String(origin.port)])
        return (origin, service, proxy)
    }

    @Test(.enabled(if: ExternalTool.shouldRun("python3 requests with PySocks (pip install requests PySocks)", present: ExternalTool.hasPythonSOCKS)))
    func pythonRequestsWithSocks5h() async throws {
        let (origin, service, proxy) = try await Self.fixture()
        defer { proxy.stop(); service.stop(); origin.stop() }
        let python = try #require(ChildEnvironment.which("python3"))
        let script = """
            import sys, requests
            proxy = sys.argv[1]
            r = requests.get(sys.argv[2], proxies={"http": proxy, "https": proxy}, timeout=10)
            print(r.status_code, r.text)
            """
        let run = try ExternalTool.run(
            python, ["-c", script, "socks5h://127.0.0.1:\(proxy.port)", "http://origin.test:\(origin.port)/hello"], timeout: .seconds(60))
        #expect(run.exitCode == 0 && run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "200 hello", "\(run.stdout) \(run.stderr)")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == "SOCKS5" }), proxy.diagnostics)
        #expect(entry.string("host") == "origin.test" && entry.string("ip") == "127.0.0.1", "\(entry.jsonText)")
        #expect(service.queryCount(for: "origin.test") == 1)
    }

    @Test(.enabled(if: ExternalTool.shouldRun("chromium (apt-get install chromium)", present: ExternalTool.chromium != nil)))
    func headlessChromiumWithASocks5Proxy() async throws {
        let (origin, service, proxy) = try await Self.fixture()
        defer { proxy.stop(); service.stop(); origin.stop() }
        let dom = try HeadlessChromium.dumpDOM("http://origin.test:\(origin.port)/hello", proxy: "socks5://127.0.0.1:\(proxy.port)")
        #expect(dom.contains("hello"), "\(dom.prefix(500))")
        // (Chromium's own background fetches come through the proxy too, refused by connect-ports.)
        let entry = try #require(
            proxy.waitForAccessLog(where: { $0.string("method") == "SOCKS5" && $0.int("port") == origin.port }), proxy.diagnostics)
        #expect(entry.string("host") == "origin.test" && entry.string("ip") == "127.0.0.1", "\(entry.jsonText)")
        #expect(origin.requests().contains { $0.uri == "/hello" }, "\(origin.requests())")
    }
}
