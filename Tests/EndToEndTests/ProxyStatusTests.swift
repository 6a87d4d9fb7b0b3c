import Foundation
import Glibc
import RawStructuredFieldValues
import Testing
import TestSupport

/// RFC 9209 `Proxy-Status` on every answer the proxy gives itself, next to `X-Proxy-Error`, parsed
/// with a real RFC 8941 parser: the error type says what failed, `details` says why.
@Suite("Proxy-Status", .onBlockingThreads, .timeLimit(.minutes(2)))
struct ProxyStatusTests {
    struct Parsed {
        var member: String
        var error: String?
        var details: String?
    }

    /// The field parsed as an sf-list of one token member with `error` and `details` parameters.
    static func parse(_ value: String?) throws -> Parsed {
        let value = try #require(value, "no Proxy-Status field")
        var parser = StructuredFieldValueParser(Array(value.utf8))
        let list = try parser.parseListFieldValue()
        try #require(list.count == 1, "one member: \(value)")
        guard case .item(let item) = list[0], case .token(let member) = item.bareItem else {
            Issue.record("not a token item: \(value)")
            throw ProxyProcess.Failure(description: value)
        }
        var parsed = Parsed(member: member)
        for (key, parameter) in item.parameters {
            switch (key, parameter) {
            case ("error", .token(let token)): parsed.error = token
            case ("details", .string(let string)): parsed.details = string
            default: Issue.record("unexpected parameter \(key) in \(value)")
            }
        }
        return parsed
    }

    @Test func aRefusedConnectIsConnectionRefused() throws {
        // A port nothing listens on: bind one, note it, close it.
        let closedPort = try Loopback.unusedPort()
        let proxy = try ProxyProcess.launch(AccessControlTests.allowLoopback)
        defer { proxy.stop() }
        let response = try Curl.fetch("http://127.0.0.1:\(closedPort)/x", proxy: proxy.proxyURL)
        #expect(response.status == 502)
        #expect(response.header("x-proxy-error") == "connect_failed")
        let status = try Self.parse(response.header("proxy-status"))
        #expect(status.member == "httpdns-proxy" && status.error == "connection_refused", "\(status)")
        #expect(status.details?.contains("connection refused") == true, "\(status)")
    }

    @Test func aDeniedDestinationIsDestinationIPProhibited() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch()
        defer { proxy.stop() }
        let response = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL)
        #expect(response.status == 403)
        let status = try Self.parse(response.header("proxy-status"))
        #expect(status.error == "destination_ip_prohibited" && status.details?.contains("loopback") == true, "\(status)")
        #expect(origin.requests().isEmpty)
    }

    @Test func anUnknownNameIsDNSErrorSaidOnce() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.setNXDOMAIN("missing.test")
        let proxy = try ProxyProcess.launch(
            HTTPDNSResolutionTests.jsonProvider(service) + ["--system-fallback", "false", "--ip-family", "ipv4"])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://missing.test/", proxy: proxy.proxyURL)
        #expect(response.status == 502)
        let status = try Self.parse(response.header("proxy-status"))
        #expect(status.error == "dns_error", "\(status)")
        #expect(response.bodyText.components(separatedBy: "cannot resolve missing.test").count == 2, "said once: \(response.bodyText)")
        #expect(status.details?.components(separatedBy: "cannot resolve").count == 2, "\(status)")
    }

    @Test func requestErrorsAndLoopsHaveTheirOwnTypes() async throws {
        let proxy = try ProxyProcess.launch(AccessControlTests.allowLoopback)
        defer { proxy.stop() }
        // Bytes that are no request: 400, http_request_error.
        let raw = try RawClient(port: proxy.port)
        try raw.send("NOT HTTP\r\n\r\n")
        let malformed = try raw.readResponse()
        #expect(malformed.statusCode == 400)
        #expect(try Self.parse(malformed.header("proxy-status")).error == "http_request_error")
        // A request that already passed through this proxy (its own Via, as the origin saw it):
        // 508, proxy_loop_detected.
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        #expect(try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL).status == 200)
        let via = try #require(origin.requests().last?.headers["via"].first)
        let loop = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-H", "Via: \(via)"])
        #expect(loop.status == 508)
        #expect(try Self.parse(loop.header("proxy-status")).error == "proxy_loop_detected", "\(loop.status) \(loop.bodyText)")
        // Its own listener as the target: refused as a destination.
        let own = try Curl.fetch("http://127.0.0.1:\(proxy.port)/", proxy: proxy.proxyURL)
        #expect(try Self.parse(own.header("proxy-status")).error == "destination_ip_prohibited", "\(own.status) \(own.bodyText)")
    }

    @Test func detailsAreAValidStringEvenForHostileText() throws {
        let proxy = try ProxyProcess.launch(AccessControlTests.allowLoopback)
        defer { proxy.stop() }
        // A target with quotes, backslashes and non-ASCII bytes: the field must still parse.
        let raw = try RawClient(port: proxy.port)
        try raw.send(Array("GET /\"a\\b\u{00e9}".utf8) + Array(" HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        let response = try raw.readResponse()
        #expect(response.statusCode == 400)
        let status = try Self.parse(response.header("proxy-status"))
        #expect(status.error == "http_request_error" && status.details != nil, "\(status)")
    }
}
