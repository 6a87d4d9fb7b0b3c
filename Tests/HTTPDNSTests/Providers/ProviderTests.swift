import CurlTransport
import Foundation
@testable import HTTPDNS
import Logging
import Testing
import TestSupport

/// Each provider against the in-process fake service over real HTTP (loopback only).
@Suite struct ProviderTests {
    @Test func alibabaUnsignedSingleAnswer() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("www.example.test", .init(ipv4: ["127.0.0.5"], ipv6: ["::1"], ttl: 120))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let provider = AlibabaProvider(
            serviceRoot: localURL(service, "/"),
            accountID: "100000",
            secret: nil,
            client: makeClient(transport, pins: ["127.0.0.1"]),
            unixTime: { 1_700_000_000 }
        )
        let answer = try await provider.resolve("www.example.test", families: .both)
        #expect(answer.ipv4 == ["127.0.0.5"])
        #expect(answer.ipv6 == ["::1"])
        #expect(answer.ttl == .seconds(120))
        #expect(answer.serverIP == "127.0.0.1")
        let request = try #require(service.requests().first)
        #expect(request.path == "/100000/d")
        #expect(request.query["query"] == "4,6")
    }

    @Test func alibabaSignedRequestsAreAcceptedAndTheSecretStaysOutOfTheURL() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.requireSignature(secret: "s3cr3t-value", now: 1_700_000_000)
        service.set("api.example.test", .init(ipv4: ["127.0.0.6"], ttl: 30))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let provider = AlibabaProvider(
            serviceRoot: localURL(service, ""),
            accountID: "100000",
            secret: "s3cr3t-value",
            client: makeClient(transport, pins: ["127.0.0.1"]),
            unixTime: { 1_700_000_000 }
        )
        let answer = try await provider.resolve("api.example.test", families: .ipv4)
        #expect(answer.ipv4 == ["127.0.0.6"])
        var dumped = ""
        dump(provider, to: &dumped)
        for text in [dumped, "\(provider)", String(reflecting: provider)] {
            #expect(!text.contains("s3cr3t-value"), "\(text)")
        }
        let request = try #require(service.requests().last)
        #expect(request.path == "/100000/sign_d")
        #expect(request.query["t"] == "1700000600")
        #expect(!request.uri.contains("s3cr3t-value"))
    }

    @Test func alibabaWrongSecretIsAnAuthFailureWithoutRetryingOtherServers() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.requireSignature(secret: "right", now: 1_700_000_000)
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let provider = AlibabaProvider(
            serviceRoot: localURL(service, ""),
            accountID: "100000",
            secret: "wrong",
            client: makeClient(transport, pins: ["127.0.0.1"]),
            unixTime: { 1_700_000_000 }
        )
        do {
            _ = try await provider.resolve("api.example.test", families: .ipv4)
            Issue.record("a bad signature must fail")
        } catch {
            #expect(error.kind == .auth)
            #expect(error.message.contains("InvalidSignature"))
            #expect(!error.message.contains("wrong"))
        }
        #expect(service.requests().count == 1)
    }

    @Test func alibabaBatch() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("a.test", .init(ipv4: ["127.0.0.7"], ttl: 40))
        service.set("b.test", .init(ipv4: ["127.0.0.8"], ipv6: ["::1"], ttl: 50))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let provider = AlibabaProvider(
            serviceRoot: localURL(service, ""),
            accountID: "1",
            secret: nil,
            client: makeClient(transport, pins: ["127.0.0.1"]),
            unixTime: { 1_700_000_000 }
        )
        #expect(provider.supportsBatch)
        let answers = try await provider.resolveBatch(["a.test", "b.test", "c.test"], families: .both)
        #expect(try answers["a.test"]?.get().ipv4 == ["127.0.0.7"])
        #expect(try answers["b.test"]?.get().ipv6 == ["::1"])
        #expect(throws: ResolveFailure.self) { try answers["c.test"]?.get() }
        #expect(service.requests().count == 1)
        #expect(service.requests().first?.path == "/1/resolve")
    }

    @Test func dohJSONFollowsCNAMEAndMergesFamilies() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setCNAME("www.example.test", to: "edge.cdn.test")
        service.set("edge.cdn.test", .init(ipv4: ["127.0.0.9"], ipv6: ["::1"], ttl: 45))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let provider = DoHJSONProvider(
            endpoint: localURL(service, "/resolve"),
            signature: nil,
            client: makeClient(transport, pins: ["127.0.0.1"]),
            unixTimeMillis: { 0 }
        )
        let answer = try await provider.resolve("www.example.test", families: .both)
        #expect(answer.ipv4 == ["127.0.0.9"])
        #expect(answer.ipv6 == ["::1"])
        #expect(answer.ttl == .seconds(45))
        #expect(service.requests().count == 2)
    }

    @Test func dohJSONNXDOMAINIsDefinitiveWithSOANegativeTTL() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setNXDOMAIN("nope.test")
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let provider = DoHJSONProvider(
            endpoint: localURL(service, "/resolve"),
            signature: nil,
            client: makeClient(transport, pins: ["127.0.0.1"]),
            unixTimeMillis: { 0 }
        )
        do {
            _ = try await provider.resolve("nope.test", families: .ipv4)
            Issue.record("NXDOMAIN must fail")
        } catch {
            #expect(error.kind == .nxdomain)
            #expect(error.negativeTTL == .seconds(15))
        }
    }

    @Test(arguments: [DoHWireProvider.Method.get, .post])
    func rfc8484(method: DoHWireProvider.Method) async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setCNAME("www.example.test", to: "edge.cdn.test")
        service.set("edge.cdn.test", .init(ipv4: ["127.0.0.10"], ipv6: ["::1"], ttl: 33))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let provider = DoHWireProvider(endpoint: localURL(service, "/dns-query"), method: method, client: makeClient(transport, pins: ["127.0.0.1"]))
        let answer = try await provider.resolve("www.example.test", families: .both)
        #expect(answer.ipv4 == ["127.0.0.10"])
        #expect(answer.ipv6 == ["::1"])
        #expect(answer.ttl == .seconds(33))
        #expect(service.requests().allSatisfy { $0.method == (method == .get ? "GET" : "POST") })
    }

    @Test func staticListFromURLAndFile() async throws {
        let json = #"{"service":"t","enable":1,"domainlist":[{"domain":"a.test.com","ips":["127.0.0.11","::1"]}]}"#
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setStaticList(json)
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let fromURL = StaticListProvider(
            source: .url(localURL(service, "/static.json")),
            refresh: .seconds(300),
            transport: transport,
            timeout: fakeServiceTimeout,
            caFile: nil,
            pinnedAddresses: ["127.0.0.1"],
            logger: Logger(label: "test")
        )
        try await fromURL.reload()
        #expect(try await fromURL.resolve("A.test.com", families: .both).ipv4 == ["127.0.0.11"])
        #expect(try await fromURL.resolve("a.test.com", families: .ipv6).ipv4 == [])
        await #expect(throws: ResolveFailure.self) { try await fromURL.resolve("other.test.com", families: .both) }

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("static-\(UUID().uuidString).json").path
        try #"{"enable":0,"domainlist":[{"domain":"a.test.com","ips":["127.0.0.11"]}]}"#.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fromFile = StaticListProvider(
            source: .file(path), refresh: .seconds(300), transport: transport, timeout: fakeServiceTimeout, caFile: nil, logger: Logger(label: "test")
        )
        try await fromFile.reload()
        do {
            _ = try await fromFile.resolve("a.test.com", families: .both)
            Issue.record("a disabled list must not answer")
        } catch {
            #expect(error.kind == .noData)
        }
    }

    @Test func aResolveBeforeTheFirstLoadWaitsForIt() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("static-\(UUID().uuidString).json").path
        try #"{"enable":1,"domainlist":[{"domain":"early.test","ips":["127.0.0.12"]}]}"#.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let transport = CurlTransport()
        defer { transport.shutdown() }
        // A long limit: the resolve must return because the load happened, not because time passed.
        let provider = StaticListProvider(
            source: .file(path), refresh: .seconds(300), transport: transport, timeout: .seconds(600), caFile: nil, logger: Logger(label: "test")
        )
        async let early = provider.resolve("early.test", families: .both)
        // Load only once the resolve is waiting (without the gate it would have failed at once).
        let deadline = ContinuousClock.now + .seconds(10)
        while provider.firstLoadWaiters == 0 && ContinuousClock.now < deadline { await Task.yield() }
        #expect(provider.firstLoadWaiters == 1, "the early resolve did not wait for the first load")
        try await provider.reload()
        #expect(try await early.ipv4 == ["127.0.0.12"])
        // A failed first load opens the gate too: callers get the error, not a wait.
        let broken = StaticListProvider(
            source: .file(path + ".missing"), refresh: .seconds(300), transport: transport, timeout: .seconds(600), caFile: nil,
            logger: Logger(label: "test")
        )
        await #expect(throws: ResolveFailure.self) { try await broken.reload() }
        await #expect(throws: ResolveFailure.self) { try await broken.resolve("early.test", families: .both) }
    }

    @Test func failsOverToTheNextServerOn5xx() async throws {
        // One port on 127.0.0.1 and 127.0.0.3; a parallel test may hold it on 127.0.0.3: another one.
        var attempt = 0
        var pair: (FakeHTTPDNSService, FakeHTTPDNSService)?
        while pair == nil {
            let candidate = try await FakeHTTPDNSService.start(host: "127.0.0.1")
            do {
                pair = (candidate, try await FakeHTTPDNSService.start(host: "127.0.0.3", port: candidate.port))
            } catch {
                candidate.stop()
                attempt += 1
                if attempt == 5 { throw error }
            }
        }
        let (first, second) = pair!
        defer { first.stop() }
        defer { second.stop() }
        first.setBehaviour(.fail(status: 503, body: "{}"))
        second.set("www.example.test", .init(ipv4: ["127.0.0.12"], ttl: 60))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let client = makeClient(transport, pins: ["127.0.0.1", "127.0.0.3"])
        let provider = DoHJSONProvider(endpoint: localURL(first, "/resolve"), signature: nil, client: client, unixTimeMillis: { 0 })
        let answer = try await provider.resolve("www.example.test", families: .ipv4)
        #expect(answer.ipv4 == ["127.0.0.12"])
        #expect(answer.serverIP == "127.0.0.3")
        #expect(first.requests().count == 1)
        // The healthy server is now tried first.
        _ = try await provider.resolve("www.example.test", families: .ipv4)
        #expect(first.requests().count == 1)
        #expect(client.servers.admit() == .go(["127.0.0.3", "127.0.0.1"]))
    }

    @Test func deadFirstServerIPIsSkipped() async throws {
        let service = try await FakeHTTPDNSService.start(host: "127.0.0.1")
        defer { service.stop() }
        service.set("www.example.test", .init(ipv4: ["127.0.0.13"], ttl: 60))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        // Nothing listens on 127.0.0.66 (no test binds that address).
        let provider = DoHJSONProvider(
            endpoint: localURL(service, "/resolve"),
            signature: nil,
            client: makeClient(transport, pins: ["127.0.0.66", "127.0.0.1"]),
            unixTimeMillis: { 0 }
        )
        let answer = try await provider.resolve("www.example.test", families: .ipv4)
        #expect(answer.ipv4 == ["127.0.0.13"])
        #expect(answer.serverIP == "127.0.0.1")
    }

    @Test func afterAFailedRotationQueriesFailFastUntilTheProbeInterval() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setBehaviour(.fail(status: 500, body: "{}"))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let clock = ManualInstant()
        let provider = DoHJSONProvider(
            endpoint: localURL(service, "/resolve"),
            signature: nil,
            client: makeClient(transport, pins: ["127.0.0.1"], now: { clock.now }),
            unixTimeMillis: { 0 }
        )
        await #expect(throws: ResolveFailure.self) { try await provider.resolve("x.test", families: .ipv4) }
        #expect(service.requests().count == 1)
        // Backing off: no request goes out.
        await #expect(throws: ResolveFailure.self) { try await provider.resolve("x.test", families: .ipv4) }
        #expect(service.requests().count == 1)
        // 30 s later one probe goes out; the service is back.
        service.setBehaviour(.normal)
        service.set("x.test", .init(ipv4: ["127.0.0.14"], ttl: 60))
        clock.advance(by: .seconds(31))
        #expect(try await provider.resolve("x.test", families: .ipv4).ipv4 == ["127.0.0.14"])
        #expect(service.requests().count == 2)
    }

    @Test func stalledServiceTimesOut() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setBehaviour(.stall)
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let provider = DoHJSONProvider(
            endpoint: localURL(service, "/resolve"),
            signature: nil,
            client: makeClient(transport, pins: ["127.0.0.1"], timeout: .milliseconds(300)),
            unixTimeMillis: { 0 }
        )
        do {
            _ = try await provider.resolve("x.test", families: .ipv4)
            Issue.record("a stalled service must time out")
        } catch {
            #expect(error.kind == .timeout)
        }
    }

    @Test func garbageIsMalformedNotACrash() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setBehaviour(.garbage)
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let provider = AlibabaProvider(
            serviceRoot: localURL(service, ""), accountID: "1", secret: nil,
            client: makeClient(transport, pins: ["127.0.0.1"]), unixTime: { 0 }
        )
        await #expect(throws: ResolveFailure.self) { try await provider.resolve("x.test", families: .ipv4) }
    }
}
