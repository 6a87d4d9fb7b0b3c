import Foundation
import Glibc
import Testing
import TestSupport

/// `--resolver-token`: a pod proxy's doh/json provider sending the node tier's `--doh-token`. The
/// node asks one fake vendor (192.0.2.10); the pods' fallback provider is a second fake vendor
/// (192.0.2.99), so every answer says which path it took.
@Suite("Resolver token (pod side of doh-token)", .onBlockingThreads, .timeLimit(.minutes(3)))
struct ResolverTokenTests {
    static let token = "node-T0ken-7c1f"
    static let wrongToken = "wrong-T0ken-0b2e"
    static let name = "www.example.test"

    static func vendors() async throws -> (node: FakeHTTPDNSService, direct: FakeHTTPDNSService) {
        let node = try await FakeHTTPDNSService.start()
        node.set(name, .init(ipv4: ["192.0.2.10"], ttl: 300))
        let direct = try await FakeHTTPDNSService.start()
        direct.set(name, .init(ipv4: ["192.0.2.99"], ttl: 300))
        return (node, direct)
    }

    static func assertNoToken(_ texts: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        for text in texts {
            #expect(!text.contains(token) && !text.contains(wrongToken), "a token was logged: \(text)", sourceLocation: sourceLocation)
        }
    }

    /// Requests the direct vendor saw that carried an Authorization field (must be none).
    static func authorizedRequests(_ service: FakeHTTPDNSService) -> Int {
        service.requests().filter { $0.headers.contains { $0.0.lowercased() == "authorization" } }.count
    }

    @Test func resolveWithTheRightTokenTheWrongOneAndNone() async throws {
        let (vendor, direct) = try await Self.vendors()
        defer { vendor.stop(); direct.stop() }
        let (node, port) = try DoHListenerTests.launchNode(vendor, extra: ["--doh-token", Self.token])
        defer { node.stop() }
        let wire = "http://localhost:\(port)/dns-query"
        // (`resolve` never asks the system resolver after the provider; this keeps it so if that changes.)
        func resolve(_ provider: String, _ url: String, _ extra: [String] = []) throws -> ResolveRun.Output {
            try DoHListenerTests.resolve(Self.name, provider: provider, url: url, extra: ["--system-fallback", "false"] + extra)
        }

        let right = try resolve("doh", wire, ["--resolver-token", Self.token, "--log-level", "trace"])
        #expect(right.status == 0, "\(right.stderr) \(node.diagnostics)")
        #expect(right.stdout.contains("A         192.0.2.10"), "\(right.stdout)")
        let json = try ResolveRun.run(
            ["resolve", Self.name, "--provider", "json", "--resolver-url", "http://localhost:\(port)/resolve", "--resolver-ip", "127.0.0.1",
             "--ip-family", "both", "--log-level", "trace", "--system-fallback", "false"],
            environment: ["HTTPDNS_PROXY_RESOLVER_TOKEN": Self.token])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout.contains("A         192.0.2.10"), "\(json.stdout)")

        // No token, or a wrong one, and no fallback: a clear auth failure, not a hang or a retry storm.
        let none = try resolve("doh", wire)
        #expect(none.status == 1)
        #expect(none.stderr.contains("refused the request (HTTP 401)"), "\(none.stderr)")
        let wrong = try resolve("json", "http://localhost:\(port)/resolve", ["--resolver-token", Self.wrongToken, "--log-level", "trace"])
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("refused the request (HTTP 401)"), "\(wrong.stderr)")

        // A wrong token with a fallback provider: the vendor answers directly, and never sees the token.
        let fallback = try resolve("doh", wire, [
            "--resolver-token", Self.wrongToken, "--log-level", "trace",
            "--fallback-provider", "json", "--fallback-resolver-url", "http://127.0.0.1:\(direct.port)/resolve",
        ])
        #expect(fallback.status == 0, "\(fallback.stderr)")
        #expect(fallback.stdout.contains("A         192.0.2.99"), "\(fallback.stdout)")
        #expect(fallback.stderr.contains("the first provider failed; asking the fallback provider"), "\(fallback.stderr)")
        #expect(direct.requests().count >= 1)
        #expect(Self.authorizedRequests(direct) == 0, "the node tier's token went to the fallback vendor")

        Self.assertNoToken([right.stderr, right.stdout, json.stderr, wrong.stderr, fallback.stderr, fallback.stdout, node.stderrText(), node.stdoutText()])
    }

    @Test func podProxiesServeWithTheRightTokenAndFallBackWithAWrongOne() async throws {
        guard ExternalTool.shouldRun("dig (dnsutils)", present: DNSListenerTests.dig != nil) else { return }
        let (vendor, direct) = try await Self.vendors()
        defer { vendor.stop(); direct.stop() }
        let (node, port) = try DoHListenerTests.launchNode(vendor, extra: ["--doh-token", Self.token])
        defer { node.stop() }
        func pod(_ token: String) throws -> (ProxyProcess, Int) {
            let pod = try ProxyProcess.launch([
                "--provider", "doh", "--resolver-url", "http://127.0.0.1:\(port)/dns-query", "--resolver-token", token,
                "--fallback-provider", "json", "--fallback-resolver-url", "http://127.0.0.1:\(direct.port)/resolve",
                "--ip-family", "ipv4", "--system-fallback", "false", "--dns-listen", "127.0.0.1:0", "--dns-upstream", "127.0.0.1:9",
                "--log-level", "trace",
            ])
            let entry = try #require(pod.waitForLog(where: { $0["message"] as? String == "dns listening" }, timeout: .seconds(30)), pod.diagnostics)
            return (pod, try #require(ProxyProcess.port(ofAddress: entry["address"] as? String ?? "")))
        }
        let (good, goodPort) = try pod(Self.token)
        defer { good.stop() }
        let (bad, badPort) = try pod(Self.wrongToken)
        defer { bad.stop() }

        let viaNode = try DNSListenerTests.dig(goodPort, ["+short", Self.name, "A"])
        #expect(viaNode.trimmingCharacters(in: .whitespacesAndNewlines) == "192.0.2.10", "\(viaNode) \(good.diagnostics)")
        #expect(good.logEntries().allSatisfy { $0["message"] as? String != "the first provider failed; asking the fallback provider" })

        let viaVendor = try DNSListenerTests.dig(badPort, ["+short", Self.name, "A"])
        #expect(viaVendor.trimmingCharacters(in: .whitespacesAndNewlines) == "192.0.2.99", "\(viaVendor) \(bad.diagnostics)")
        let warning = bad.waitForLog(where: { $0["message"] as? String == "the first provider failed; asking the fallback provider" })
        #expect(warning?["error"] as? String == "auth", "\(bad.diagnostics)")
        #expect(Self.authorizedRequests(direct) == 0, "the node tier's token went to the fallback vendor")

        Self.assertNoToken([good.stderrText(), good.stdoutText(), bad.stderrText(), bad.stdoutText(), node.stderrText()])
    }
}
