import Foundation
import Testing

/// deploy/grafana's dashboard: every panel's query is valid PromQL (promtool, over a rules file
/// made of the queries) and names only metrics that a real scrape of the binary exports.
@Suite("Grafana dashboard", .onBlockingThreads, .timeLimit(.minutes(2)))
struct DashboardTests {
    static func dashboard() throws -> [String: Any] {
        var components = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        components.removeLast(3)
        let path = (components + ["deploy", "grafana", "httpdns-proxy-dashboard.json"]).joined(separator: "/")
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    /// Every target expression of every panel (rows included), with Grafana's variables replaced
    /// by what Prometheus would receive.
    static func expressions(_ dashboard: [String: Any]) -> [(panel: String, expr: String)] {
        var result: [(String, String)] = []
        func walk(_ panels: [[String: Any]]) {
            for panel in panels {
                let title = panel["title"] as? String ?? "?"
                for target in panel["targets"] as? [[String: Any]] ?? [] {
                    guard let expr = target["expr"] as? String else { continue }
                    result.append((title, expr.replacingOccurrences(of: "$__rate_interval", with: "5m")
                        .replacingOccurrences(of: "$instance", with: ".*")))
                }
                walk(panel["panels"] as? [[String: Any]] ?? [])
            }
        }
        walk(dashboard["panels"] as? [[String: Any]] ?? [])
        return result
    }

    /// The metric names an expression reads (histogram series back to their family).
    static func metricNames(_ expr: String) -> Set<String> {
        let pattern = try! NSRegularExpression(pattern: "\\b(?:httpdns_proxy|process)_[a-z_]+")
        let range = NSRange(expr.startIndex..., in: expr)
        return Set(pattern.matches(in: expr, range: range).map { match in
            var name = String(expr[Range(match.range, in: expr)!])
            for suffix in ["_bucket", "_count", "_sum"] where name.hasSuffix(suffix) && name.contains("_seconds") {
                name.removeLast(suffix.count)
            }
            return name
        })
    }

    @Test func everyQueryParsesAndReadsExportedMetrics() throws {
        let dashboard = try Self.dashboard()
        let expressions = Self.expressions(dashboard)
        #expect(expressions.count >= 20, "the dashboard lost its panels")
        let titles = Set(expressions.map(\.panel))
        for required in ["Errors/s by Proxy-Status type", "Request latency", "Lookups by source", "Cache hit ratio",
                         "DNS listener answers by RCODE", "Transparent hijacks", "Open connections and tunnels"] {
            #expect(titles.contains(required), "no panel \(required)")
        }

        // promtool: each query as a recording rule.
        let found = ChildEnvironment.which("promtool")
        if ExternalTool.shouldRun("promtool (Debian package prometheus)", present: found != nil) {
            let promtool = try #require(found, "promtool is required: apt-get install prometheus")
            var rules = "groups:\n  - name: dashboard\n    rules:\n"
            for (index, item) in expressions.enumerated() {
                let quoted = item.expr.replacingOccurrences(of: "'", with: "''")
                rules += "      - record: dashboard:panel_\(index)\n        expr: '\(quoted)'\n"
            }
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("dashboard-rules-\(UUID().uuidString).yaml")
            try rules.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            let result = try ExternalTool.run(promtool, ["check", "rules", file.path], timeout: .seconds(30))
            #expect(result.exitCode == 0, "promtool: \(result.stdout)\(result.stderr)")
        }

        // A real scrape: every family the dashboard reads is exported (the DNS listener's only
        // with a DNS listener).
        let proxy = try ProxyProcess.launch(["--dns-listen", "127.0.0.1:0", "--transparent-listen", "127.0.0.1:0"])
        defer { proxy.stop() }
        let (text, _) = try MetricsTests.scrape(proxy)
        let exported = Set(text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { String($0.split(separator: " ")[2]) })
        let read = expressions.reduce(into: Set<String>()) { $0.formUnion(Self.metricNames($1.expr)) }
        #expect(read.count >= 20)
        #expect(read.subtracting(exported).isEmpty, "the dashboard reads metrics the binary does not export: \(read.subtracting(exported).sorted())")
    }
}
