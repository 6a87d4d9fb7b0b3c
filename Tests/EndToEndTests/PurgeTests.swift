import Foundation
import Testing
import TestSupport

/// Purge means "stop using that address": after `DELETE /cache?host=H` the next request to H asks
/// the resolver again and dials a new upstream connection instead of riding the pooled one.
@Suite("Purge", .onBlockingThreads, .timeLimit(.minutes(2)))
struct PurgeTests {
    @Test func purgingAHostForgetsItsAnswerAndItsPooledConnection() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        // One event loop: every client connection shares one upstream pool.
        let proxy = try ProxyProcess.launch(
            HTTPDNSResolutionTests.jsonProvider(service) + ["--system-fallback", "false", "--ip-family", "ipv4", "--threads", "1"])
        defer { proxy.stop() }
        let url = "http://origin.test:\(origin.port)/hello"

        for _ in 0..<2 {
            let response = try Curl.fetch(url, proxy: proxy.proxyURL)
            #expect(response.status == 200, "\(response.stderr) \(proxy.diagnostics)")
        }
        #expect(origin.connectionCount == 1, "the second request must ride the pooled connection")
        #expect(service.queryCount(for: "origin.test") == 1, "the second request must be answered from the cache")

        let purge = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/cache?host=ORIGIN.test", proxy: nil, extra: ["-X", "DELETE"])
        #expect(purge.status == 200)
        #expect(purge.bodyText.contains("purged ORIGIN.test; closed 1 pooled connection"), "\(purge.bodyText)")

        let after = try Curl.fetch(url, proxy: proxy.proxyURL)
        #expect(after.status == 200, "\(after.stderr) \(proxy.diagnostics)")
        #expect(origin.connectionCount == 2, "after a purge the proxy must dial afresh")
        #expect(service.queryCount(for: "origin.test") == 2, "after a purge the proxy must ask the resolver again")
    }

    /// Without an HTTPDNS cache (`--provider system`) purging everything still retires the pool.
    @Test func purgingEverythingRetiresEveryPooledConnection() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(["--allow-destination", "127.0.0.0/8", "--ip-family", "ipv4", "--threads", "1"])
        defer { proxy.stop() }
        let url = "http://localhost:\(origin.port)/hello"
        for _ in 0..<2 {
            #expect(try Curl.fetch(url, proxy: proxy.proxyURL).status == 200, proxy.diagnostics)
        }
        #expect(origin.connectionCount == 1)

        let purge = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/cache", proxy: nil, extra: ["-X", "DELETE"])
        #expect(purge.status == 200)
        #expect(purge.bodyText.contains("purged all (no HTTPDNS cache with --provider system); closed 1 pooled connection"), "\(purge.bodyText)")

        #expect(try Curl.fetch(url, proxy: proxy.proxyURL).status == 200, proxy.diagnostics)
        #expect(origin.connectionCount == 2)
    }
}
