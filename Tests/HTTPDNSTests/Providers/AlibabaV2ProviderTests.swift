import CurlTransport
import Foundation
@testable import HTTPDNS
import Logging
import Testing
import TestSupport

/// The v2 provider against the fake v2 service (which checks signatures and decrypts like the
/// real one) over real HTTP on loopback.
@Suite(.timeLimit(.minutes(1))) struct AlibabaV2ProviderTests {
    static let secretHex = "00112233445566778899aabbccddeeff"
    static let aesHex = "000102030405060708090a0b0c0d0e0f"
    static let now = 1_700_000_000

    static func provider(
        _ service: FakeAlibabaV2Service, transport: CurlTransport, pins: [String] = ["127.0.0.1"],
        secret: String? = secretHex, aes: String? = nil, encryption: AlibabaHTTPDNSV2.Encryption = .none,
        scheduler: AlibabaServiceScheduler? = nil, client: ResolverClient? = nil
    ) -> AlibabaV2Provider {
        AlibabaV2Provider(
            serviceRoot: "http://localhost:\(service.port)/",
            credentials: .init(accountID: "139450", secretKey: secret.flatMap(Digest.bytes(fromHex:)),
                               aesKey: aes.flatMap(Digest.bytes(fromHex:)), encryption: encryption),
            client: client ?? makeClient(transport, pins: pins),
            scheduler: scheduler,
            unixTime: { now }
        )
    }

    @Test func dumpAndDescriptionsShowNoKeys() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450", secretHex: Self.secretHex)
        defer { service.stop() }
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let scheduler = AlibabaServiceScheduler(
            settings: .init(serviceRoot: "http://localhost:\(service.port)", accountID: "139450", secret: Self.secretHex, sdkVersion: "t",
                            refreshInterval: .seconds(60), timeout: .seconds(1), caFile: nil),
            servers: ResolverServers(ips: ["127.0.0.1"]), transport: transport, unixTime: { 0 }, logger: Logger(label: "test"))
        let provider = Self.provider(service, transport: transport, aes: Self.aesHex, encryption: .gcm, scheduler: scheduler)
        var dumped = ""
        dump(provider, to: &dumped)
        let texts = [dumped, "\(provider)", String(reflecting: provider)]
        for text in texts {
            #expect(!text.contains(Self.secretHex))
            // key bytes would show as the decimal elements of the arrays
            #expect(!text.contains("secretKey:") || text.contains("secretKey: <redacted>"))
            #expect(!text.contains("▿ secretKey") && !text.contains("▿ aesKey"))
        }
        #expect(dumped.contains("139450"))
    }

    @Test func signedPlainQuery() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450", secretHex: Self.secretHex)
        defer { service.stop() }
        service.setNow(Self.now)
        service.set("www.example.test", .init(ipv4: ["127.0.0.5"], ipv6: ["::1"], ttl: 120))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let answer = try await Self.provider(service, transport: transport).resolve("www.example.test", families: .both)
        #expect(answer.ipv4 == ["127.0.0.5"])
        #expect(answer.ipv6 == ["::1"])
        #expect(answer.ttl == .seconds(120))
        #expect(answer.serverIP == "127.0.0.1")
        let request = try #require(service.queryRequests.first)
        #expect(request.query["dn"] == "www.example.test")
        #expect(request.query["q"] == "4,6")
        #expect(request.query["exp"] == "1700000600")
        #expect(request.query["s"]?.count == 64)
        #expect(!request.uri.contains(Self.secretHex))
    }

    @Test func expiredOrWrongSignaturesAreRefusedWithoutRetrying() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450", secretHex: Self.secretHex)
        defer { service.stop() }
        let transport = CurlTransport()
        defer { transport.shutdown() }
        // The service's clock is past our expiry.
        service.setNow(Self.now + 601)
        await #expect(throws: ResolveFailure.self) { try await Self.provider(service, transport: transport).resolve("a.test", families: .ipv4) }
        service.setNow(Self.now)
        do {
            _ = try await Self.provider(service, transport: transport, secret: "ffeeddccbbaa99887766554433221100").resolve("a.test", families: .ipv4)
            Issue.record("a wrong secret must fail")
        } catch {
            #expect(error.kind == .auth)
            #expect(error.message.contains("InvalidSignature"))
        }
        #expect(service.queryRequests.count == 2)
    }

    @Test(arguments: [AlibabaHTTPDNSV2.Encryption.cbc, .gcm])
    func encryptedQueryAndAnswer(encryption: AlibabaHTTPDNSV2.Encryption) async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450", secretHex: Self.secretHex, aesKeyHex: Self.aesHex)
        defer { service.stop() }
        service.setNow(Self.now)
        service.set("secret-name.test", .init(ipv4: ["127.0.0.8"], ttl: 30))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let provider = Self.provider(service, transport: transport, aes: Self.aesHex, encryption: encryption)
        let answer = try await provider.resolve("secret-name.test", families: .ipv4)
        #expect(answer.ipv4 == ["127.0.0.8"])
        #expect(answer.ttl == .seconds(30))
        let request = try #require(service.queryRequests.last)
        #expect(request.query["m"] == String(encryption.mode))
        #expect(request.query["dn"] == nil)
        #expect(request.query["enc"] != nil)
        #expect(!request.uri.contains("secret-name"))
        #expect(!request.uri.contains(Self.aesHex))
    }

    @Test func wrongAESKeyIsRefused() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450", secretHex: Self.secretHex, aesKeyHex: Self.aesHex)
        defer { service.stop() }
        service.setNow(Self.now)
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let provider = Self.provider(service, transport: transport, aes: "0f0e0d0c0b0a09080706050403020100", encryption: .gcm)
        await #expect(throws: ResolveFailure.self) { try await provider.resolve("a.test", families: .ipv4) }
    }

    @Test func batchAndNoIPCode() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450")
        defer { service.stop() }
        service.set("a.test", .init(ipv4: ["127.0.0.7"], ttl: 0))
        service.set("b.test", .init(ipv6: ["::1"], ttl: 50))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let provider = Self.provider(service, transport: transport, secret: nil)
        #expect(provider.supportsBatch)
        let answers = try await provider.resolveBatch(["a.test", "b.test", "c.test"], families: .both)
        #expect(try answers["a.test"]?.get().ipv4 == ["127.0.0.7"])
        #expect(try answers["a.test"]?.get().ttl == .seconds(60), "ttl 0 counts as 60")
        #expect(try answers["b.test"]?.get().ipv6 == ["::1"])
        #expect(try answers["b.test"]?.get().ipv4 == [])
        do {
            _ = try answers["c.test"]?.get()
            Issue.record("c.test has no addresses")
        } catch {
            #expect(error.kind == .noData)
        }
        let requests = service.queryRequests
        #expect(requests.count == 1)
        #expect(requests.first?.query["dn"] == "a.test,b.test,c.test")
        #expect(requests.first?.query["s"] == nil, "no secret: unsigned")
    }

    /// Two fake servers on one port (127.0.0.1 and 127.0.0.2). The port is free on 127.0.0.1 but
    /// may be taken on 127.0.0.2 by another test running in parallel: then another port.
    static func twoServersOnOnePort() async throws -> (FakeAlibabaV2Service, FakeAlibabaV2Service) {
        var attempt = 0
        while true {
            let first = try await FakeAlibabaV2Service.start(account: "139450")
            do {
                return (first, try await FakeAlibabaV2Service.start(host: "127.0.0.2", port: first.port, account: "139450"))
            } catch {
                first.stop()
                attempt += 1
                if attempt == 5 { throw error }
            }
        }
    }

    /// Two fake servers on one port (127.0.0.1 and 127.0.0.2): the first fails with `code`.
    private func firstServerFails(status: Int, code: String) async throws -> (Result<ResolvedAnswer, ResolveFailure>, second: Int) {
        let (first, second) = try await Self.twoServersOnOnePort()
        defer { first.stop() }
        defer { second.stop() }
        first.failQueries((status, code))
        second.set("a.test", .init(ipv4: ["127.0.0.9"]))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let provider = Self.provider(first, transport: transport, pins: ["127.0.0.1", "127.0.0.2"], secret: nil)
        let result: Result<ResolvedAnswer, ResolveFailure>
        do {
            result = .success(try await provider.resolve("a.test", families: .ipv4))
        } catch {
            result = .failure(error)
        }
        #expect(first.queryRequests.count == 1)
        return (result, second.queryRequests.count)
    }

    @Test(arguments: [(500, "InternalError"), (405, "MethodNotAllowed")])
    func serverTroubleMovesToTheNextServer(status: Int, code: String) async throws {
        let (result, second) = try await firstServerFails(status: status, code: code)
        #expect(try result.get().serverIP == "127.0.0.2")
        #expect(second == 1)
    }

    @Test(arguments: ["MissingArgument", "InvalidHost", "TooManyHosts", "SdnsNotSupported"])
    func badRequestsAreNotRetried(code: String) async throws {
        let (result, second) = try await firstServerFails(status: 400, code: code)
        #expect(second == 0)
        guard case .failure(let failure) = result else { Issue.record("must fail"); return }
        #expect(failure.kind == .server)
        #expect(failure.message.contains(code))
    }

    @Test func invalidAccountIsAnAuthFailureWithoutRetrying() async throws {
        let (result, second) = try await firstServerFails(status: 403, code: "InvalidAccount")
        #expect(second == 0)
        guard case .failure(let failure) = result else { Issue.record("must fail"); return }
        #expect(failure.kind == .auth)
    }
}
