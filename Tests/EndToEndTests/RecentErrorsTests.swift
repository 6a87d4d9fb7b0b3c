import Foundation
import Testing

/// `/errors` and the admin page's "Recent errors": the server keeps the last 100 failed requests
/// and tunnels, so what failed before anyone looked is still there to see.
@Suite("Recent errors", .onBlockingThreads, .timeLimit(.minutes(3)))
struct RecentErrorsTests {
    static func errors(_ proxy: ProxyProcess) throws -> [String: Any] {
        let response = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/errors", proxy: nil)
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        return try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any], "\(response.bodyText)")
    }

    @Test func theRingKeepsTheLastHundredFailuresNewestFirst() throws {
        let proxy = try ProxyProcess.launch(["--allow-destination", "127.0.0.0/8"])
        defer { proxy.stop() }
        let empty = try Self.errors(proxy)
        #expect(empty["total"] as? Int == 0 && (empty["errors"] as? [Any])?.isEmpty == true, "\(empty)")

        // A refused connect: the proxy dialed 127.0.0.1 and answered 502.
        let closed = try Loopback.unusedPort()
        let refused = try Curl.fetch("http://127.0.0.1:\(closed)/first", proxy: proxy.proxyURL)
        #expect(refused.status == 502)
        let logged = try #require(proxy.waitForAccessLog(where: { $0["port"] as? Int == closed }), proxy.diagnostics)
        let first = try #require((try Self.errors(proxy)["errors"] as? [[String: Any]])?.first)
        #expect(first["target"] as? String == "127.0.0.1:\(closed)", "\(first)")
        #expect(first["ip"] as? String == "127.0.0.1", "the dialed address: \(first)")
        #expect(first["status"] as? Int == 502 && first["method"] as? String == "GET" && ((first["client"] as? String) ?? "").hasPrefix("127.0.0.1:"), "\(first)")
        #expect(first["type"] as? String == "request", "\(first)")
        #expect(first["reason"] as? String == logged["error"] as? String, "the access log's error: \(first) vs \(logged)")
        #expect(((first["kind"] as? String) ?? "").hasPrefix("connect"), "\(first)")
        #expect(((first["at"] as? String) ?? "").hasSuffix("Z"), "\(first)")

        // 104 more, refused by the SSRF guard (link-local, never dialed): 105 in all, 100 kept.
        let config = (0..<104).map { "url = \"http://169.254.0.1:\(2000 + $0)/\"\noutput = \"/dev/null\"\n" }.joined()
        let denied = try Curl.run(
            ["-sS", "-w", "%{http_code}\\n", "-x", proxy.proxyURL, "-K", "-"], stdin: Data(config.utf8), timeout: .seconds(60))
        #expect(denied.stdoutText.split(separator: "\n").allSatisfy { $0 == "403" }, "\(denied.stdoutText) \(denied.stderr)")
        #expect(proxy.waitForAccessLogs(count: 105, where: { $0["error"] is String }) != nil, proxy.diagnostics)
        let report = try Self.errors(proxy)
        let kept = try #require(report["errors"] as? [[String: Any]])
        #expect(report["capacity"] as? Int == 100 && report["total"] as? Int == 105, "\(report["total"] ?? "?")")
        #expect(kept.count == 100)
        #expect(kept.first?["target"] as? String == "169.254.0.1:2103", "newest first: \(kept.first ?? [:])")
        #expect(kept.last?["target"] as? String == "169.254.0.1:2004", "the oldest kept: \(kept.last ?? [:])")
        #expect(!kept.contains { $0["target"] as? String == "127.0.0.1:\(closed)" }, "the oldest were overwritten")
        #expect(kept.allSatisfy { $0["kind"] as? String == "destination_denied" && $0["status"] as? Int == 403 && $0["ip"] == nil })
        #expect(kept.allSatisfy { (($0["reason"] as? String) ?? "").count <= 200 })
        print("/errors: total \(report["total"] ?? "?"), kept \(kept.count), newest \(kept.first?["target"] ?? "?"), oldest kept \(kept.last?["target"] ?? "?")")
    }

    @Test(.enabled(if: ExternalTool.shouldRun("chromium (apt-get install chromium)", present: ExternalTool.chromium != nil)))
    func anErrorFromBeforeThePageOpenedIsOnIt() throws {
        // The ring does not depend on the access log or metrics being on.
        let proxy = try ProxyProcess.launch(["--allow-destination", "127.0.0.0/8", "--access-log", "off", "--metrics", "false"])
        defer { proxy.stop() }
        let closed = try Loopback.unusedPort()
        #expect(try Curl.fetch("http://127.0.0.1:\(closed)/before-the-page", proxy: proxy.proxyURL).status == 502)

        let dom = try HeadlessChromium.dumpDOM("http://127.0.0.1:\(proxy.adminPort)/")
        let row = try #require(
            AdminPageTests.element(in: dom, from: "<tr data-error-kind=\"", to: "</tr>"), "no error row in:\n\(dom.prefix(6000))")
        #expect(row.contains("GET 127.0.0.1:\(closed)"), "\(row)")
        #expect(row.contains("<td class=\"ip\">127.0.0.1</td>"), "\(row)")
        #expect(row.contains("<td class=\"num status\">502</td>"), "\(row)")
        let summary = try #require(AdminPageTests.element(in: dom, from: "<p id=\"errors-summary\"", to: "</p>"))
        #expect(summary.contains("1 since the proxy started"), "\(summary)")
        print("admin page error row: \(row)")
    }
}
