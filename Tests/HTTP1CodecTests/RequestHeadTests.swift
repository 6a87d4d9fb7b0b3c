import HTTP1Codec
import HTTP1CodecOracle
import NIOCore
import NIOHTTP1
import ProxyHTTP
import ProxyKit
import Testing

/// Request heads byte by byte: every strictness rule with a specific input and its exact verdict,
/// and the reason texts checked against the ones today's code produces for the same flaw.
@Suite struct RequestHeadTests {
    /// The reference's own mapping of llhttp errors (the texts the codec's are checked against).
    @Test func todaysParserErrorsGetTheRightStatus() {
        #expect(RequestParseFailure.proxyError(for: .headerOverflow, requestLineLength: 90_000).status == .uriTooLong)
        #expect(RequestParseFailure.proxyError(for: .headerOverflow, requestLineLength: 40).status == .requestHeaderFieldsTooLarge)
        #expect(RequestParseFailure.proxyError(for: .unknown, requestLineLength: 40).status == .badRequest)
        #expect(RequestParseFailure.proxyError(for: .invalidChunkSize, requestLineLength: 40).status == .badRequest)
    }

    /// Today's answer for an llhttp error, as the machine builds it.
    static func today(_ error: HTTPParserError, line: Int = 40) -> String {
        RequestParseFailure.proxyError(for: error, requestLineLength: line).message
    }

    static func malformed(_ reason: String?) -> String? { reason.map { "malformed request: " + $0 } }

    @Test func aSimpleRequest() {
        let t = decode(get("Host: a.test\r\nX-A:  1 \r\n"))
        #expect(t.outcome == .clean)
        #expect(t.messages.count == 1)
        #expect(t.messages[0].method == "GET" && t.messages[0].target == "http://a.test/x" && t.messages[0].minorVersion == 1)
        #expect(t.messages[0].fields == ["Host: a.test", "X-A: 1"])
        #expect(t.messages[0].ended)
    }

    @Test(arguments: [
        ("G@T / HTTP/1.1\r\n\r\n", HTTPParserError.invalidMethod),
        (" GET / HTTP/1.1\r\n\r\n", .invalidMethod),
        ("GET\r\n\r\n", .invalidMethod),
        ("GET  / HTTP/1.1\r\n\r\n", .invalidURL),
        ("GET /a\u{01}b HTTP/1.1\r\n\r\n", .invalidURL),
        ("GET /caf\u{E9} HTTP/1.1\r\n\r\n", .invalidURL),
        ("GET / HTTP/1.2\r\n\r\n", .invalidVersion),
        ("GET / HTTP/2.0\r\n\r\n", .invalidVersion),
        ("GET / http/1.1\r\n\r\n", .invalidVersion),
        ("GET / HTTP/1.1 \r\n\r\n", .invalidVersion),
        ("GET / HTTP/1.1\nHost: a\n\n", .lfExpected),
        ("GET / HTTP/1.1\r\nHost: a\n\r\n", .lfExpected),
        ("GET / HTTP/1.1\r\nX-A: 1\rTransfer-Encoding: chunked\r\n\r\n", .lfExpected),
        ("GET / HTTP/1.1\rX\r\n\r\n", .lfExpected),
        ("GET / HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n", .invalidHeaderToken),
        ("GET / HTTP/1.1\r\n Host: a\r\n\r\n", .invalidHeaderToken),
        ("GET / HTTP/1.1\r\nX-A: 1\r\n\tTransfer-Encoding: chunked\r\n\r\n", .invalidHeaderToken),
        ("GET / HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", .invalidHeaderToken),
        ("GET / HTTP/1.1\r\n: empty name\r\n\r\n", .invalidHeaderToken),
        ("GET / HTTP/1.1\r\nNo colon\r\n\r\n", .invalidHeaderToken),
        ("GET / HTTP/1.1\r\nX-A: chun\u{00}ked\r\n\r\n", .invalidHeaderToken),
        ("GET / HTTP/1.1\r\nX-A: chunked\u{0B}\r\n\r\n", .invalidHeaderToken),
        ("GET / HTTP/1.1\r\nX-A: \u{0C}chunked\r\n\r\n", .invalidHeaderToken),
        ("GET / HTTP/1.1\r\nX-A: a\u{7F}\r\n\r\n", .invalidHeaderToken),
    ])
    func refusedHeads(_ text: String, _ flaw: HTTPParserError) {
        let t = decode(text)
        #expect(t.errorKind == "malformed_request", "\(text.debugDescription): \(t)")
        #expect(Self.malformed(t.reason) == Self.today(flaw), "\(text.debugDescription)")
        #expect(t.messages.isEmpty)
    }

    @Test func fieldValuesMayHoldObsTextSpacesAndTabs() {
        let t = decode(get("X-A: caf\u{E9}\tau lait\r\nX-Empty:\r\nX-Spaces:   \r\n"))
        #expect(t.outcome == .clean)
        #expect(t.messages[0].fields == ["X-A: caf\u{E9}\tau lait", "X-Empty: ", "X-Spaces: "])
    }

    @Test func extensionMethodsAreTokens() {
        #expect(decode("FOO / HTTP/1.1\r\n\r\n").messages.first?.method == "FOO")
        #expect(decode("get / HTTP/1.1\r\n\r\n").messages.first?.method == "get")
        #expect(decode("M-SEARCH * HTTP/1.1\r\n\r\n").messages.first?.target == "*")
    }

    @Test func emptyLinesBeforeARequestAreIgnored() {
        let t = decode("\r\n\r\n" + get())
        #expect(t.outcome == .clean && t.messages.count == 1)
        #expect(decode("\r\n", splits: [1]).outcome == .clean)
        // A lone LF may end a line (RFC 9112 §2.2); a CR without its LF may not.
        #expect(decode("\n" + get()).messages.count == 1)
        #expect(decode("\rGET / HTTP/1.1\r\n\r\n").errorKind == "malformed_request")
    }

    // MARK: - Content-Length

    @Test(arguments: [
        ("Content-Length: 5\r\nContent-Length: 5\r\n", HTTPParserError.unexpectedContentLength),
        ("Content-Length: 5\r\nContent-Length: 6\r\n", .unexpectedContentLength),
        ("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", .unexpectedContentLength),
        ("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", .unexpectedContentLength),
        ("Content-Length: +5\r\n", .invalidContentLength),
        ("Content-Length: -1\r\n", .invalidContentLength),
        ("Content-Length: 5, 5\r\n", .invalidContentLength),
        ("Content-Length: 0x5\r\n", .invalidContentLength),
        ("Content-Length: 5 5\r\n", .invalidContentLength),
        ("Content-Length:\r\n", .invalidContentLength),
        ("Content-Length: 1234567890123456789\r\n", .invalidContentLength),
        ("Content-Length: 99999999999999999999999\r\n", .invalidContentLength),
    ])
    func refusedContentLengths(_ fields: String, _ flaw: HTTPParserError) {
        let t = decode(post(fields, body: "hello"))
        #expect(Self.malformed(t.reason) == Self.today(flaw), "\(fields.debugDescription): \(t)")
    }

    @Test func contentLengthFramesTheBody() {
        let t = decode(post("Content-Length: 005 \r\n", body: "helloGET / HTTP/1.1\r\n\r\n"))
        #expect(t.bodies == ["hello", ""])
        #expect(t.messages.map(\.method) == ["POST", "GET"])
        #expect(t.outcome == .clean)
        let zero = decode(post("Content-Length: 0\r\n"))
        #expect(zero.messages.count == 1 && zero.messages[0].ended)
    }

    // MARK: - Transfer-Encoding (MessageFraming's rules and texts)

    /// Today's verdict for a request with these fields, from MessageRewriter (MessageFraming).
    static func todayFraming(_ fields: [(String, String)], version: HTTPVersion = .http1_1) -> ProxyError? {
        let head = HTTPRequestHead(version: version, method: .POST, uri: "http://a.test/x", headers: HTTPHeaders(fields))
        do {
            _ = try MessageRewriter.rewriteRequest(head, target: try! RequestTarget.parseAbsolute("http://a.test/x"), via: ViaHeader(pseudonym: "t"))
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        ["gzip, chunked"], ["gzip", "chunked"], ["deflate,chunked"], ["GZIP ,  Chunked"],
        ["chunked, chunked"], ["chunked", "chunked"], ["chunked, identity"], ["identity"], ["gzip"], ["xchunked"],
        ["chunkedx"], [""], [","], [" , "], ["chunked;x=1"], ["a b, chunked"],
    ])
    func transferCodings(_ values: [String]) throws {
        let fields = values.map { "Transfer-Encoding: \($0)\r\n" }.joined()
        let t = decode(post(fields, body: "5\r\nhello\r\n0\r\n\r\n"))
        let expected = try #require(Self.todayFraming(values.map { ("Transfer-Encoding", $0) }))
        #expect(t.errorKind == expected.kind.description, "\(values): \(t)")
        let reason = expected.kind.description == "malformed_request" ? Self.malformed(t.reason) : t.reason
        #expect(reason == expected.message)
    }

    @Test func transferEncodingOnHTTP10() throws {
        let t = decode(post("Transfer-Encoding: chunked\r\n", body: "0\r\n\r\n", version: "1.0"))
        let expected = try #require(Self.todayFraming([("Transfer-Encoding", "chunked")], version: .http1_0))
        #expect(Self.malformed(t.reason) == expected.message)
    }

    /// `chunked,` ends in an empty element: llhttp does not take chunked as final there, so the
    /// codec refuses it too (found by the fuzzer), whatever RFC 9110 §5.6.1 says of empty elements.
    @Test(arguments: ["chunked,", "chunked , ", "chunked,\r\nTransfer-Encoding:"])
    func chunkedNotFinalAsWritten(_ value: String) {
        let t = decode(post("Transfer-Encoding: \(value)\r\n", body: "5\r\nhello\r\n0\r\n\r\n"))
        #expect(t.reason == "request Transfer-Encoding must end in chunked, applied once (RFC 9112 §6.3)", "\(value.debugDescription): \(t)")
        let response = decode(response("HTTP/1.1 200 OK", "Transfer-Encoding: \(value)\r\n", body: "0\r\n\r\n"), .response)
        #expect(response.errorKind == "invalid_response")
    }

    @Test(arguments: ["chunked", "CHUNKED", "  chunked  ", "\tchunked", ", chunked"])
    func chunkedSpellings(_ value: String) {
        let t = decode(post("Transfer-Encoding: \(value)\r\n", body: "5;name=value\r\nhello\r\n0;x\r\n\r\n"))
        #expect(t.outcome == .clean, "\(value.debugDescription): \(t)")
        #expect(t.bodies == ["hello"])
    }

    // MARK: - limits

    @Test func targetLimit() {
        let limit = HTTP1Limits().maxTargetLength
        #expect(decode(get(target: "/" + String(repeating: "a", count: limit - 1))).outcome == .clean)
        let long = decode(get(target: "/" + String(repeating: "a", count: limit)))
        #expect(long.errorKind == "uri_too_long")
        #expect(long.reason == "the request line is \(limit + 5) bytes or more; the limit for the target is \(limit)")
        // Cut before the head is complete: refused as soon as the target passes the limit.
        let early = decode("GET /" + String(repeating: "a", count: 9000), splits: [100, 8300])
        #expect(early.errorKind == "uri_too_long")
    }

    @Test func headLimits() {
        let fields = String(repeating: "X-A: b\r\n", count: 256)
        #expect(decode(get(fields)).outcome == .clean)
        let many = decode(get(fields + "X-A: b\r\n"))
        #expect(many.errorKind == "headers_too_large")
        #expect(many.reason == Self.today(.headerOverflow))
        let big = decode(get("X-Big: " + String(repeating: "a", count: 80 * 1024) + "\r\n"))
        #expect(big.errorKind == "headers_too_large")
        #expect(big.reason == Self.today(.headerOverflow))
        // Exactly at the limit: accepted.
        let prefix = "GET / HTTP/1.1\r\nX-Big: "
        let exact = prefix + String(repeating: "a", count: 80 * 1024 - prefix.utf8.count - 4) + "\r\n\r\n"
        #expect(decode(exact).outcome == .clean)
        #expect(decode(exact + "x").messages.count == 1)
    }

    @Test func requestLineOverflowingTheHeadIs414() {
        var limits = HTTP1Limits()
        limits.maxTargetLength = 100_000
        let t = decode(get(target: "/" + String(repeating: "a", count: 90_000)), limits: limits)
        #expect(t.errorKind == "uri_too_long")
        #expect(t.reason == "the request line is 81920 bytes or more; the limit for the target is 100000")
        #expect(Self.today(.headerOverflow, line: 81920) == "the request line is 81920 bytes or more; the limit for the target is 8192")
    }

    // MARK: - what ends a connection's HTTP

    @Test func connectionCloseStopsParsing() {
        let t = decode(get("Connection: keep-alive, close\r\n") + "GARBAGE")
        #expect(t.messages.count == 1 && t.outcome == .stopped("close"))
        let http10 = decode(get(version: "1.0") + get())
        #expect(http10.messages.count == 1 && http10.outcome == .stopped("close"))
        let kept = decode(get("Connection: Keep-Alive\r\n", version: "1.0") + get())
        #expect(kept.messages.count == 2 && kept.outcome == .clean)
    }

    @Test func connectIsATunnel() {
        let t = decode("CONNECT a.test:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\n\u{16}\u{03}\u{01}tls")
        #expect(t.messages.count == 1 && t.messages[0].ended && t.messages[0].body.isEmpty)
        #expect(t.outcome == .stopped("tunnel"))
        // Its framing fields are still judged (RFC 9112 §6.3 rule 4 applies to every request).
        #expect(decode("CONNECT a.test:443 HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n").errorKind == "malformed_request")
    }

    @Test func upgradeStopsAfterTheBodyAndResumes() throws {
        var decoder = MessageDecoder(role: .request)
        var buffer = ByteBuffer(string: post("Connection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 2\r\n", body: "hi") + get())
        guard case .head(let head) = try decoder.next(&buffer) else { Issue.record("no head"); return }
        #expect(head.isUpgrade)
        guard case .body = try decoder.next(&buffer), case .end = try decoder.next(&buffer) else { Issue.record("no body"); return }
        guard case .stopped(.upgrade) = try decoder.next(&buffer) else { Issue.record("no stop"); return }
        decoder.resume()
        guard case .head(let next) = try decoder.next(&buffer) else { Issue.record("no second head"); return }
        #expect(next.methodKind == .get)
    }
}
