import Foundation
import Testing
import TestSupport

/// The admin `/metrics` endpoint of the real binary: the contract's names, and counts that agree
/// with `/stats`, the access log and what the fake HTTPDNS service saw.
@Suite("Prometheus metrics", .onBlockingThreads, .timeLimit(.minutes(2)))
struct MetricsTests {
    /// `name{labels} value` lines of a Prometheus text exposition, keyed by `name{labels}` with
    /// the labels in the order written.
    static func samples(_ text: String) -> [String: Double] {
        var result: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            result[String(line[..<space])] = value
        }
        return result
    }

    static func scrape(_ proxy: ProxyProcess) throws -> (text: String, samples: [String: Double]) {
        let response = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/metrics", proxy: nil)
        #expect(response.status == 200)
        #expect(response.header("content-type")?.hasPrefix("text/plain; version=0.0.4") == true)
        return (response.bodyText, samples(response.bodyText))
    }

    @Test func countersAgreeWithStatsTheAccessLogAndTheResolverService() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        service.setNXDOMAIN("missing.test")
        let proxy = try ProxyProcess.launch(
            HTTPDNSResolutionTests.jsonProvider(service) + ["--system-fallback", "false", "--ip-family", "ipv4",
                                                            "--connect-ports", String(origin.port)])
        defer { proxy.stop() }

        for _ in 0..<3 {
            let response = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL)
            #expect(response.status == 200, "\(response.stderr) \(proxy.diagnostics)")
        }
        let missing = try Curl.fetch("http://missing.test:\(origin.port)/hello", proxy: proxy.proxyURL)
        #expect(missing.status == 502)
        let refused = try Curl.fetch("http://127.0.0.1:1/", proxy: proxy.proxyURL)
        #expect(refused.status == 502)
        let tunnel = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: proxy.proxyURL, extra: ["-p"])
        #expect(tunnel.status == 200, "\(tunnel.stderr)")
        #expect(proxy.waitForAccessLogs(count: 6, where: { _ in true }) != nil, proxy.diagnostics)

        let (text, metrics) = try Self.scrape(proxy)
        func value(_ key: String) -> Double { metrics[key] ?? 0 }
        // Requests by kind and class, and the error reasons (as the access log has them).
        #expect(value("httpdns_proxy_requests_total{kind=\"http\",code_class=\"2xx\"}") == 3, "\(text)")
        #expect(value("httpdns_proxy_requests_total{kind=\"http\",code_class=\"5xx\"}") == 2)
        #expect(value("httpdns_proxy_requests_total{kind=\"connect\",code_class=\"2xx\"}") == 1)
        #expect(value("httpdns_proxy_request_errors_total{reason=\"resolve_failed\"}") == 1)
        #expect(value("httpdns_proxy_request_errors_total{reason=\"connect_failed\"}") == 1)
        #expect(value("httpdns_proxy_request_duration_seconds_count{kind=\"http\"}") == 5)
        #expect(value("httpdns_proxy_request_duration_seconds_count{kind=\"connect\"}") == 1)
        #expect(value("httpdns_proxy_tunnels_active") == 0 && value("httpdns_proxy_client_connections_active") >= 0)
        // Upstream: three fresh connects and two pooled reuses for origin.test, one refused dial.
        #expect(value("httpdns_proxy_upstream_connect_attempts_total{family=\"ipv4\",result=\"refused\"}") == 1)
        let connects = value("httpdns_proxy_upstream_connect_attempts_total{family=\"ipv4\",result=\"ok\"}")
        let reuses = value("httpdns_proxy_upstream_pool_reuses_total")
        #expect(connects + reuses == 4, "one upstream per forwarded request or tunnel: \(connects) + \(reuses)")
        #expect(value("httpdns_proxy_upstream_connect_duration_seconds_count") == connects)

        // The resolver: what the fake service counted, and what /stats says.
        let queries = Double(service.queryCount(for: "origin.test") + service.queryCount(for: "missing.test"))
        #expect(queries == 2)
        #expect(value("httpdns_proxy_resolver_queries_total{provider=\"json\",result=\"ok\"}") == 1)
        #expect(value("httpdns_proxy_resolver_queries_total{provider=\"json\",result=\"nxdomain\"}") == 1)
        #expect(value("httpdns_proxy_resolver_query_duration_seconds_count{provider=\"json\"}") == queries)
        let stats = try #require(
            try JSONSerialization.jsonObject(with: try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/stats", proxy: nil).body)
                as? [String: Any])
        let totals = try #require(stats["totals"] as? [String: Any])
        #expect(Double(totals["queries"] as? Int ?? -1) == queries)
        #expect(value("httpdns_proxy_resolve_requests_total{result=\"miss\"}") == queries)
        #expect(Double(totals["cacheHits"] as? Int ?? -1) == value("httpdns_proxy_resolve_requests_total{result=\"hit\"}"), "\(totals)")
        #expect(value("httpdns_proxy_resolve_requests_total{result=\"hit\"}") >= 1)
        #expect(value("httpdns_proxy_cache_entries") == 2, "origin.test and the negative entry for missing.test")
        #expect(value("httpdns_proxy_build_info{version=\"0.1.0\"}") == 1 || text.contains("httpdns_proxy_build_info{version="))
        // Bounded labels only: no host, address or path ever appears in the exposition.
        for forbidden in ["origin.test", "missing.test", "127.0.0.1", "/hello"] {
            #expect(!text.contains(forbidden), "\(forbidden) leaked into a label")
        }
        // Every metric family carries its HELP line, right before its TYPE line.
        let lines = text.split(separator: "\n").map(String.init)
        for (index, line) in lines.enumerated() where line.hasPrefix("# TYPE ") {
            let name = line.dropFirst(7).prefix { $0 != " " }
            #expect(index > 0 && lines[index - 1].hasPrefix("# HELP \(name) ") && lines[index - 1].count > "# HELP \(name) ".count,
                    "no HELP for \(name)")
        }
        try Self.promtoolCheck(text)
    }

    /// The `process_*` metrics every Prometheus client exports, checked against what /proc says
    /// about the proxy's process from outside.
    @Test func processMetricsDescribeTheProxysProcess() throws {
        let proxy = try ProxyProcess.launch([])
        defer { proxy.stop() }
        let (text, metrics) = try Self.scrape(proxy)
        for name in ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
                     "process_open_fds", "process_max_fds", "process_start_time_seconds"] {
            #expect(metrics[name] != nil, "\(name) missing from \(text)")
        }
        let procfs = "/proc/\(proxy.pid)"
        // RSS: /proc/PID/status's VmRSS, read right after the scrape (the same order of magnitude).
        let status = try String(contentsOfFile: procfs + "/status", encoding: .utf8)
        let rssKiB = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.flatMap {
            Double($0.split(separator: " ", omittingEmptySubsequences: true)[1]) })
        let resident = try #require(metrics["process_resident_memory_bytes"])
        #expect(resident > rssKiB * 1024 / 2 && resident < rssKiB * 1024 * 2, "\(resident) vs VmRSS \(rssKiB) KiB")
        // Descriptors: the scrape's own connection is one of them.
        let open = try FileManager.default.contentsOfDirectory(atPath: procfs + "/fd").count
        #expect(abs((metrics["process_open_fds"] ?? 0) - Double(open)) <= 2, "\(metrics["process_open_fds"] ?? 0) vs \(open)")
        let limits = try String(contentsOfFile: procfs + "/limits", encoding: .utf8)
        let soft = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }.flatMap {
            Double($0.split(separator: " ", omittingEmptySubsequences: true)[3]) })
        #expect(metrics["process_max_fds"] == soft)
        let started = try #require(metrics["process_start_time_seconds"])
        let now = Date().timeIntervalSince1970
        #expect(started <= now + 1 && started > now - 300, "started \(started), now \(now)")
        #expect((metrics["process_cpu_seconds_total"] ?? 0) > 0)
        try Self.promtoolCheck(text)
    }

    @Test func metricsOffAnswers404() throws {
        let proxy = try ProxyProcess.launch(["--metrics", "false"])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/metrics", proxy: nil)
        #expect(response.status == 404)
        #expect(response.bodyText.contains("--metrics false"))
    }

    /// `promtool check metrics` (Debian's prometheus package) lints the exposition (skipped
    /// loudly when it is missing and this is not root; as root it must be there).
    static func promtoolCheck(_ text: String) throws {
        let found = ChildEnvironment.which("promtool")
        guard ExternalTool.shouldRun("promtool (Debian package prometheus)", present: found != nil) else { return }
        let promtool = try #require(found, "promtool is required: apt-get install prometheus")
        let result = try ExternalTool.run(promtool, ["check", "metrics"], timeout: .seconds(30), stdin: text)
        #expect(result.exitCode == 0, "promtool: \(result.stdout)\(result.stderr)")
    }
}
