import Foundation
import Testing
import TestSupport

/// `--route` through the binary: the first matching rule decides for HTTP, CONNECT and SOCKS
/// alike, before anything is resolved; a denied destination gets 403 (SOCKS: "not allowed") naming
/// the rule, and neither the HTTPDNS service nor the origin hears of it.
@Suite("Route rules", .onBlockingThreads, .timeLimit(.minutes(2)))
struct RouteRulesTests {
    static let rules = ["--route", "api.corp.test=direct", "--route", ".corp.test=deny", "--route", "127.0.0.0/8=deny"]

    @Test func denyAndDirectByTheFirstMatchingRule() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        for name in ["api.corp.test", "www.corp.test", "origin.test"] {
            service.set(name, .init(ipv4: ["127.0.0.1"], ttl: 300))
        }
        let proxy = try HTTPDNSResolutionTests.launchOnService(service, Self.rules + ["--connect-ports", String(origin.port)])
        defer { proxy.stop() }
        let port = origin.port

        // HTTP: denied by rule 2, before resolution.
        let denied = try Curl.fetch("http://www.corp.test:\(port)/hello", proxy: proxy.proxyURL)
        #expect(denied.status == 403, "\(denied.stderr) \(proxy.diagnostics)")
        #expect(denied.bodyText.contains("connections to www.corp.test are denied by route rule 2 (corp.test=deny; see --route)"), "\(denied.bodyText)")
        #expect(denied.header("proxy-status")?.contains("error=http_request_denied") == true, "\(denied.allHeads)")
        let record = try #require(proxy.waitForAccessLog(where: { $0.string("host") == "www.corp.test" }), proxy.diagnostics)
        #expect(record.int("status") == 403)
        #expect(record.string("error")?.contains("route rule 2") == true, "\(record)")

        // CONNECT and SOCKS5 to the same name: refused in their own terms.
        let tunnel = try Curl.fetch("http://www.corp.test:\(port)/hello", proxy: proxy.proxyURL, extra: ["--proxytunnel"])
        #expect(tunnel.status == 403 || tunnel.stderr.contains("403"), "\(tunnel.stderr)")
        let socks = try Curl.fetch("http://www.corp.test:\(port)/hello", proxy: "socks5h://127.0.0.1:\(proxy.port)")
        #expect(socks.exitCode != 0 && socks.status == 0, "\(socks.stderr)")
        let socksRecord = try #require(proxy.waitForAccessLog(where: { $0.string("method") == "SOCKS5" }), proxy.diagnostics)
        #expect(socksRecord.string("error")?.contains("denied by route rule 2") == true, "\(socksRecord)")
        // The reply itself, byte for byte: SOCKS5 02 (connection not allowed by ruleset).
        let raw = try RawClient(port: proxy.port)
        defer { raw.close() }
        try raw.send([0x05, 0x01, 0x00])
        #expect(try raw.read(exactly: 2) == [0x05, 0x00])
        let name = Array("www.corp.test".utf8)
        try raw.send([0x05, 0x01, 0x00, 0x03, UInt8(name.count)] + name + [UInt8(port >> 8), UInt8(port & 0xFF)])
        #expect(try raw.read(exactly: 2) == [0x05, 0x02])
        #expect(service.queryCount(for: "www.corp.test") == 0, "a denied name is never resolved")

        // Rule 1 (direct) comes first for api.corp.test; origin.test matches no rule. A block
        // matches IP literals only: origin.test resolves to 127.0.0.1 and is dialed, while the
        // literal 127.0.0.1 is denied by rule 3.
        for name in ["api.corp.test", "origin.test"] {
            let allowed = try Curl.fetch("http://\(name):\(port)/hello", proxy: proxy.proxyURL)
            #expect(allowed.status == 200 && allowed.bodyText == "hello", "\(name): \(allowed.stderr) \(proxy.diagnostics)")
        }
        let literal = try Curl.fetch("http://127.0.0.1:\(port)/hello", proxy: proxy.proxyURL)
        #expect(literal.status == 403 && literal.bodyText.contains("route rule 3 (127.0.0.0/8=deny"), "\(literal.bodyText)")
        #expect(origin.requests().count == 2, "only the two allowed requests reached the origin")
    }
}
