import Foundation
import Testing
import TestSupport

/// `/summary` and the admin page's "Since the start": what the proxy served before anyone looked,
/// through the binary; and the admin listener's answers to a wrong method or an unknown path.
@Suite("Admin summary", .onBlockingThreads, .timeLimit(.minutes(3)))
struct AdminSummaryTests {
    static func summary(_ proxy: ProxyProcess) throws -> [String: Any] {
        let response = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/summary", proxy: nil)
        #expect(response.status == 200 && response.header("Content-Type") == "application/json", "\(response.bodyText)")
        return try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any], "\(response.bodyText)")
    }

    /// A 200 and a 404 from the origin and a 502 (refused connect), made before anything is read.
    static func makeTraffic(_ proxy: ProxyProcess, origin: TestOrigin, extra: [String] = []) throws -> Int {
        #expect(try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: extra).status == 200)
        #expect(try Curl.fetch(origin.url("/no-such-page"), proxy: proxy.proxyURL, extra: extra).status == 404)
        let closed = try Loopback.unusedPort()
        #expect(try Curl.fetch("http://127.0.0.1:\(closed)/refused", proxy: proxy.proxyURL, extra: extra).status == 502)
        return closed
    }

    static func version() throws -> String {
        let run = try ExternalTool.run(try ProxyProcess.binaryURL().path, ["--version"], timeout: .seconds(20))
        return run.stdout.split(separator: "\n").first.map { String($0).trimmingCharacters(in: .whitespaces) } ?? ""
    }

    @Test func theSummaryCountsWhatHappenedBeforeItWasRead() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch([
            "--allow-destination", "127.0.0.0/8", "--max-connections", "77", "--max-connections-per-client", "33",
            "--proxy-auth", "alice:s3cret-pass", "--access-log", "off", "--metrics", "false",
        ])
        defer { proxy.stop() }
        _ = try Self.makeTraffic(proxy, origin: origin, extra: ["--proxy-user", "alice:s3cret-pass"])

        let summary = try Self.summary(proxy)
        let version = try Self.version()
        #expect(!version.isEmpty && (summary["version"] as? String).map { version.contains($0) } == true, "\(summary) vs --version \(version)")
        #expect((summary["uptimeSeconds"] as? Int).map { $0 >= 0 } == true && ((summary["startedAt"] as? String) ?? "").hasSuffix("Z"))
        let connections = try #require(summary["connections"] as? [String: Any])
        #expect(connections["max"] as? Int == 77 && connections["maxPerClient"] as? Int == 33, "\(connections)")
        #expect(connections["tunnels"] as? Int == 0, "\(connections)")
        let requests = try #require(summary["requests"] as? [String: Any])
        let byClass = try #require(requests["byClass"] as? [String: Int])
        #expect(byClass == ["2xx": 1, "3xx": 0, "4xx": 1, "5xx": 1], "\(requests)")
        #expect(requests["total"] as? Int == 3, "\(requests)")
        #expect(((requests["bytesDown"] as? Int) ?? 0) >= 5, "at least the body \"hello\": \(requests)")
        let latency = try #require(summary["latency"] as? [String: Any])
        #expect(latency["count"] as? Int == 3, "\(latency)")
        let p50 = try #require(latency["p50Ms"] as? Double), p90 = try #require(latency["p90Ms"] as? Double)
        let p99 = try #require(latency["p99Ms"] as? Double), max = try #require(latency["maxMs"] as? Double)
        #expect(0 < p50 && p50 <= p90 && p90 <= p99 && p99 <= max, "\(latency)")

        // The configuration in force, every option by its name, the password never shown.
        let settings = try #require(summary["configuration"] as? [[String: String]])
        let values = Dictionary(settings.map { ($0["name"] ?? "", $0["value"] ?? "") }, uniquingKeysWith: { a, _ in a })
        #expect(values["max-connections"] == "77", "\(values)")
        #expect(values["proxy-auth"]?.contains("alice") == true && values["proxy-auth"]?.contains("<redacted>") == true, "\(values)")
        #expect(!String(decoding: try JSONSerialization.data(withJSONObject: summary), as: UTF8.self).contains("s3cret-pass"))
        print("/summary: \(byClass), latency \(latency), connections \(connections)")
    }

    /// An open tunnel is among the open connections and shown as one; closed, it counts as a 2xx.
    @Test func openTunnelsAreShownAgainstTheConnectionLimit() async throws {
        let echo = try await TCPEchoServer.start()
        defer { echo.stop() }
        let proxy = try ProxyProcess.launch(ConnectTunnelTests.tunnelArguments(port: echo.port) + ["--max-connections", "9"])
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        try client.send("CONNECT \(echo.authority) HTTP/1.1\r\nHost: \(echo.authority)\r\n\r\n")
        #expect(try client.readHead().statusCode == 200)
        let open = try #require(try Self.summary(proxy)["connections"] as? [String: Any])
        #expect(open["tunnels"] as? Int == 1 && open["open"] as? Int == 1 && open["max"] as? Int == 9, "\(open)")
        client.close()
        let deadline = ContinuousClock.now + .seconds(5)
        var after: [String: Any] = [:]
        repeat {
            after = try Self.summary(proxy)
            if (after["connections"] as? [String: Any])?["tunnels"] as? Int == 0 { break }
            try await Task.sleep(for: .milliseconds(20))  // polls the admin summary until the tunnel is gone
        } while ContinuousClock.now < deadline
        let connections = try #require(after["connections"] as? [String: Any])
        #expect(connections["tunnels"] as? Int == 0 && connections["open"] as? Int == 0, "\(after)")
        #expect((after["requests"] as? [String: Any])?["byClass"] as? [String: Int] == ["2xx": 1, "3xx": 0, "4xx": 0, "5xx": 0], "\(after)")
        #expect((after["latency"] as? [String: Any])?["count"] as? Int == 0, "a tunnel's lifetime is no request time: \(after)")
    }

    @Test func getReloadIsRefusedWithAllowPost() throws {
        let proxy = try ProxyProcess.launch()
        defer { proxy.stop() }
        let get = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/reload", proxy: nil)
        #expect(get.status == 405, "\(get.bodyText)")
        #expect(get.header("Allow") == "POST")
        #expect(get.bodyText.contains("POST /reload"), "the body says to POST: \(get.bodyText)")
        // Nothing was reloaded.
        let stats = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/stats", proxy: nil)
        let reload = (try JSONSerialization.jsonObject(with: stats.body) as? [String: Any])?["reload"] as? [String: Any]
        #expect(reload?["reloads"] as? Int == 0, "\(stats.bodyText)")
        let head = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/stats", proxy: nil, extra: ["-X", "DELETE"])
        #expect(head.status == 405 && head.header("Allow") == "GET", "\(head.allHeads)")
    }

    /// The 404 names every endpoint, one a line; each one it names is routed (answers something other
    /// than the 404 for unknown paths). docs/operations.md is checked against the same list
    /// (`DocumentationCheckTests`).
    @Test func anUnknownPathListsEveryEndpoint() throws {
        let proxy = try ProxyProcess.launch()
        defer { proxy.stop() }
        let endpoints = try Self.endpoints(proxy)
        for expected in ["GET /summary", "GET /stats", "GET /errors", "POST /reload", "GET /metrics", "GET /healthz", "GET /proxy.pac"] {
            #expect(endpoints.contains { $0.method == expected.split(separator: " ")[0] && $0.path == expected.split(separator: " ")[1] }, "\(expected) missing from \(endpoints)")
        }
        for endpoint in endpoints {
            let response = try Curl.fetch(
                "http://127.0.0.1:\(proxy.adminPort)\(endpoint.path)", proxy: nil, extra: ["-X", endpoint.method, "-H", "Origin:"])
            #expect(!(response.status == 404 && response.bodyText.hasPrefix("not found:")), "\(endpoint) is listed but not routed")
        }
    }

    /// The endpoints the admin 404 lists, as (method, path) without query strings.
    static func endpoints(_ proxy: ProxyProcess) throws -> [(method: String, path: String)] {
        let response = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/no-such-endpoint", proxy: nil)
        #expect(response.status == 404)
        #expect(response.bodyText.hasPrefix("not found: /no-such-endpoint\n"), "\(response.bodyText)")
        var endpoints: [(method: String, path: String)] = []
        for line in response.bodyText.split(separator: "\n").dropFirst(2) {
            for usage in line.split(separator: ",") {
                let words = usage.split(separator: " ")
                guard words.count == 2 else { continue }
                endpoints.append((String(words[0]), String(words[1].split(separator: "?")[0])))
            }
        }
        #expect(endpoints.count >= 10, "\(response.bodyText)")
        return endpoints
    }
}
