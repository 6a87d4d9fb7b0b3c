import CurlTransport
@testable import HTTPDNS
import Testing
import TestSupport

/// `resolver-token`: the doh and json providers send `Authorization: Bearer TOKEN` (a node tier's
/// `doh-token`), and a service refusing it is an auth failure, not "try the next server".
@Suite struct BearerTokenTests {
    private static let token = "node-tier-T0ken_42"

    private static func provider(
        _ kind: String, service: FakeHTTPDNSService, transport: CurlTransport, token: String?
    ) -> any HTTPDNSProvider {
        let client = makeClient(transport, pins: ["127.0.0.1"])
        switch kind {
        case "json":
            return DoHJSONProvider(endpoint: localURL(service, "/resolve"), signature: nil, client: client, bearerToken: token, unixTimeMillis: { 0 })
        case "doh-post":
            return DoHWireProvider(endpoint: localURL(service, "/dns-query"), method: .post, client: client, bearerToken: token)
        default:
            return DoHWireProvider(endpoint: localURL(service, "/dns-query"), method: .get, client: client, bearerToken: token)
        }
    }

    private static func authorizations(_ service: FakeHTTPDNSService) -> [[String]] {
        service.requests().map { request in
            request.headers.filter { $0.0.lowercased() == "authorization" }.map(\.1)
        }
    }

    @Test(arguments: ["json", "doh-get", "doh-post"])
    func theTokenIsSentOnEveryQuery(kind: String) async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("www.example.test", .init(ipv4: ["127.0.0.10"], ipv6: ["::1"], ttl: 30))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let answer = try await Self.provider(kind, service: service, transport: transport, token: Self.token)
            .resolve("www.example.test", families: .both)
        #expect(answer.ipv4 == ["127.0.0.10"])
        let seen = Self.authorizations(service)
        // One query per family, each with exactly one Authorization field; never in the URL.
        #expect(seen.count == 2)
        #expect(seen.allSatisfy { $0 == ["Bearer \(Self.token)"] }, "\(seen)")
        #expect(service.requests().allSatisfy { !$0.uri.contains(Self.token) })
    }

    @Test(arguments: ["json", "doh-get", "doh-post"])
    func withoutATokenNoAuthorizationIsSent(kind: String) async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("www.example.test", .init(ipv4: ["127.0.0.10"], ttl: 30))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        _ = try await Self.provider(kind, service: service, transport: transport, token: nil)
            .resolve("www.example.test", families: .ipv4)
        #expect(Self.authorizations(service) == [[]])
    }

    @Test(arguments: ["json", "doh-get", "doh-post"], [401, 403])
    func aRefusedTokenIsAnAuthFailureAskedOfOneServerOnly(kind: String, status: Int) async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setBehaviour(.fail(status: status, body: "unauthorized"))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let client = ResolverClient(
            transport: transport, servers: ResolverServers(ips: ["127.0.0.1", "127.0.0.2"]), timeout: fakeServiceTimeout, caFile: nil,
            logger: .init(label: "test")
        )
        let provider: any HTTPDNSProvider = kind == "json"
            ? DoHJSONProvider(endpoint: localURL(service, "/resolve"), signature: nil, client: client, bearerToken: "wrong", unixTimeMillis: { 0 })
            : DoHWireProvider(endpoint: localURL(service, "/dns-query"), method: kind == "doh-post" ? .post : .get, client: client, bearerToken: "wrong")
        do {
            _ = try await provider.resolve("www.example.test", families: .ipv4)
            Issue.record("a refused token must fail")
        } catch {
            #expect(error.kind == .auth, "\(error)")
            #expect(error.message.contains("HTTP \(status)"), "\(error)")
            #expect(!error.description.contains("wrong"), "\(error)")
        }
        // The second server would say the same: it is not asked.
        #expect(service.requests().count == 1)
    }
}
