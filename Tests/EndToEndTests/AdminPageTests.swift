import Foundation
import Testing
import TestSupport

/// The live admin page at `/`, loaded by a real browser (headless Chromium) from the running
/// binary: after its first refresh the DOM shows what the JSON endpoints know.
@Suite("Admin page", .onBlockingThreads, .timeLimit(.minutes(3)))
struct AdminPageTests {
    @Test func theRawPageIsSelfContained() throws {
        let proxy = try ProxyProcess.launch()
        defer { proxy.stop() }
        let page = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/", proxy: nil)
        #expect(page.status == 200)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.bodyText.contains("<table id=\"domains\">"))
        for external in ["http://", "https://", "//cdn", "<link", "src="] {
            #expect(!page.bodyText.contains(external), "the page must not load \(external) assets")
        }
    }

    @Test(.enabled(if: ExternalTool.shouldRun("chromium (apt-get install chromium)", present: ExternalTool.chromium != nil)))
    func aBrowserShowsTheLiveNumbers() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let proxy = try ProxyProcess.launch(
            HTTPDNSResolutionTests.jsonProvider(service) + ["--system-fallback", "false", "--ip-family", "ipv4"])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.stderr) \(proxy.diagnostics)")

        let admin = "http://127.0.0.1:\(proxy.adminPort)/"
        let screenshot = ProcessInfo.processInfo.environment["HTTPDNS_PROXY_SCREENSHOT"].map { URL(fileURLWithPath: $0) }
        let dom = try HeadlessChromium.dumpDOM(admin, screenshot: screenshot)

        let row = try #require(Self.element(in: dom, from: "<tr data-domain=\"origin.test\"", to: "</tr>"), "no row for origin.test in:\n\(dom.prefix(4000))")
        #expect(row.contains("<td class=\"num queries\">1</td>"), "\(row)")
        #expect(row.contains("<td class=\"last-source\">httpdns</td>"), "\(row)")
        #expect(row.contains("127.0.0.1 ("), "the cached address with its TTL: \(row)")
        #expect(row.contains("<button"), "a purge button: \(row)")
        let ips = try #require(Self.element(in: dom, from: "<tr data-ip=\"127.0.0.1:\(origin.port)\"", to: "</tr>"), "no IP health row")
        #expect(ips.contains("healthy"), "\(ips)")
        #expect(dom.contains("data-refreshes=\""), "the page never finished a refresh")

        let metrics = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/metrics", proxy: nil)
        // The status line itself (the page's script, also in the DOM, contains every message).
        let status = try #require(Self.element(in: dom, from: "<span id=\"metrics-status\"", to: "</span>"), "no metrics status")
        if metrics.status == 404 {
            #expect(status.contains("metrics unavailable"), "without /metrics the page must say so: \(status)")
        } else {
            #expect(metrics.status == 200)
            #expect(!status.contains("unavailable") && !status.contains("waiting"), "/metrics answers 200 but the page did not use it: \(status)")
        }
    }

    /// Traffic made before the page is loaded (a 200, a 404 from the origin, a 502): the overview
    /// shows it from `/summary`, with the version, the uptime, the limits and the percentiles, and
    /// the server-kept error history names the host that failed.
    @Test(.enabled(if: ExternalTool.shouldRun("chromium (apt-get install chromium)", present: ExternalTool.chromium != nil)))
    func theOverviewShowsWhatHappenedBeforeThePageOpened() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(["--allow-destination", "127.0.0.0/8", "--max-connections", "77", "--max-connections-per-client", "33"])
        defer { proxy.stop() }
        let closed = try AdminSummaryTests.makeTraffic(proxy, origin: origin)

        let dom = try HeadlessChromium.dumpDOM("http://127.0.0.1:\(proxy.adminPort)/")
        func cell(_ attribute: String) throws -> String {
            let element = try #require(Self.element(in: dom, from: "<td class=\"num\" \(attribute)>", to: "</td>"), "no \(attribute) in:\n\(dom.prefix(6000))")
            return String(element.dropFirst("<td class=\"num\" \(attribute)>".count).dropLast("</td>".count))
        }
        #expect(try cell("data-class=\"2xx\"") == "1")
        #expect(try cell("data-class=\"3xx\"") == "0")
        #expect(try cell("data-class=\"4xx\"") == "1")
        #expect(try cell("data-class=\"5xx\"") == "1")
        #expect(try cell("data-class=\"total\"") == "3")
        #expect(try cell("data-p=\"count\"") == "3")
        for p in ["p50", "p90", "p99"] {
            let text = try cell("data-p=\"\(p)\"")
            #expect(text.hasSuffix(" ms") && Double(text.dropLast(3)).map { $0 > 0 } == true, "\(p): \(text)")
        }
        let version = try AdminSummaryTests.version()
        func figure(_ id: String) throws -> String {
            let open = "<b id=\"\(id)\">"
            let element = try #require(Self.element(in: dom, from: open, to: "</b>"), "no #\(id)")
            return String(element.dropFirst(open.count).dropLast("</b>".count))
        }
        let shown = try figure("version")
        #expect(!shown.isEmpty && shown != "–" && version.contains(shown), "\(shown) vs --version \(version)")
        let uptime = try figure("uptime")
        #expect(uptime.hasSuffix(" s") && uptime.first?.isNumber == true, "\(uptime)")
        #expect(try figure("connections").hasSuffix(" / 77"), "open connections against --max-connections")
        #expect(Self.element(in: dom, from: "<span id=\"per-client\">", to: "</span>") == "<span id=\"per-client\">33</span>")
        #expect(dom.contains("<tr data-setting=\"max-connections\"><td>max-connections</td><td>77</td><td>flag --max-connections</td></tr>"),
                "the configuration in force, with where each value came from")
        let error = try #require(Self.element(in: dom, from: "<tr data-error-kind=\"", to: "</tr>"), "no error row")
        #expect(error.contains("GET 127.0.0.1:\(closed)") && error.contains("<td class=\"num status\">502</td>"), "\(error)")
        print("overview: 2xx/4xx/5xx = 1/1/1, \(shown), \(uptime)")
    }

    /// The text from `from` up to and including the next `to`.
    static func element(in text: String, from: String, to: String) -> String? {
        guard let start = text.range(of: from), let end = text.range(of: to, range: start.upperBound..<text.endIndex) else { return nil }
        return String(text[start.lowerBound..<end.upperBound])
    }
}
