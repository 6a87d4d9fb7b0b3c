import Foundation
import Glibc
import Testing
import TestSupport

/// `--doh-listen`: a node-tier proxy serving its cache as RFC 8484 DoH and JSON, queried by the
/// proxy's own `doh` and `json` providers (`httpdns-proxy resolve`) and by curl.
@Suite("DoH listener", .onBlockingThreads, .timeLimit(.minutes(2)))
struct DoHListenerTests {
    /// A node-tier proxy with the DoH listener on a free loopback port.
    static func launchNode(_ service: FakeHTTPDNSService, extra: [String] = []) throws -> (ProxyProcess, Int) {
        let proxy = try ProxyProcess.launch(
            HTTPDNSResolutionTests.jsonProvider(service)
                + ["--system-fallback", "false", "--ip-family", "both", "--doh-listen", "127.0.0.1:0", "--dns-upstream", "127.0.0.1:9"] + extra)
        let entry = try #require(proxy.waitForLog(where: { $0["message"] as? String == "doh listening" }, timeout: .seconds(30)), proxy.diagnostics)
        return (proxy, try #require(ProxyProcess.port(ofAddress: entry["address"] as? String ?? "")))
    }

    static func resolve(_ name: String, provider: String, url: String, extra: [String] = []) throws -> ResolveRun.Output {
        try ResolveRun.run(["resolve", name, "--provider", provider, "--resolver-url", url, "--resolver-ip", "127.0.0.1", "--ip-family", "both"] + extra)
    }

    @Test func theProxysOwnProvidersResolveThroughIt() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("www.example.test", .init(ipv4: ["192.0.2.10"], ipv6: ["2001:db8::10"], ttl: 300))
        service.setNXDOMAIN("gone.test")
        let (node, port) = try Self.launchNode(service)
        defer { node.stop() }

        let wire = try Self.resolve("www.example.test", provider: "doh", url: "http://localhost:\(port)/dns-query")
        #expect(wire.status == 0, "\(wire.stderr) \(node.diagnostics)")
        #expect(wire.stdout.contains("A         192.0.2.10"), "\(wire.stdout)")
        #expect(wire.stdout.contains("AAAA      2001:db8::10"))
        let post = try Self.resolve("www.example.test", provider: "doh", url: "http://localhost:\(port)/dns-query", extra: ["--doh-method", "post"])
        #expect(post.status == 0, "\(post.stderr)")
        #expect(post.stdout.contains("A         192.0.2.10"), "\(post.stdout)")
        let json = try Self.resolve("www.example.test", provider: "json", url: "http://localhost:\(port)/resolve")
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout.contains("AAAA      2001:db8::10"), "\(json.stdout)")
        // Six lookups by the pod side (three runs, two families each), answered from one query per
        // family at most: the node's cache.
        #expect(service.queryCount(for: "www.example.test") <= 2, "\(service.requests().count)")

        let gone = try Self.resolve("gone.test", provider: "json", url: "http://localhost:\(port)/resolve")
        #expect(gone.status == 1)
        #expect(gone.stderr.contains("nxdomain"), "\(gone.stderr)")
        let goneWire = try Self.resolve("gone.test", provider: "doh", url: "http://localhost:\(port)/dns-query")
        #expect(goneWire.stderr.contains("nxdomain"), "\(goneWire.stderr)")
    }

    @Test func badRequestsAndTheBearerToken() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("www.example.test", .init(ipv4: ["192.0.2.10"], ttl: 300))
        let (node, port) = try Self.launchNode(service, extra: ["--doh-token", "s3cret-token"])
        defer { node.stop() }
        let base = "http://127.0.0.1:\(port)"
        #expect(try Curl.fetch("\(base)/resolve?name=www.example.test&type=A", proxy: nil).status == 401)
        let wrong = try Curl.fetch("\(base)/resolve?name=www.example.test&type=A", proxy: nil, extra: ["-H", "Authorization: Bearer nope"])
        #expect(wrong.status == 401)
        let auth = ["-H", "Authorization: Bearer s3cret-token"]
        let ok = try Curl.fetch("\(base)/resolve?name=www.example.test&type=A", proxy: nil, extra: auth)
        #expect(ok.status == 200, "\(ok.bodyText) \(node.diagnostics)")
        #expect(ok.bodyText.contains("\"data\":\"192.0.2.10\""), "\(ok.bodyText)")
        #expect(try Curl.fetch("\(base)/dns-query?dns=!!!", proxy: nil, extra: auth).status == 400)
        #expect(try Curl.fetch("\(base)/resolve?name=www.example.test&type=MX", proxy: nil, extra: auth).status == 400)
        #expect(try Curl.fetch("\(base)/elsewhere", proxy: nil, extra: auth).status == 404)
        let huge = try Curl.fetch(
            "\(base)/dns-query", proxy: nil,
            extra: auth + ["-X", "POST", "-H", "Content-Type: application/dns-message", "--data-binary", String(repeating: "x", count: 5000)])
        #expect(huge.status == 413)
        // A POST body that is not a DNS query.
        let junk = try Curl.fetch(
            "\(base)/dns-query", proxy: nil, extra: auth + ["-X", "POST", "-H", "Content-Type: application/dns-message", "--data-binary", "xy"])
        #expect(junk.status == 400)
        #expect(!node.stderrText().contains("s3cret-token"), "the token is never logged")
    }
}
