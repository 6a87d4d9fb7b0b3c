import Foundation
import Testing
import TestSupport

/// The proxy's HTTP/1.1 framing, byte for byte (issue 10): a raw client sends exactly the bytes of
/// each case through the real binary, and `WireOrigin` records exactly what reaches the origin.
/// Cases come from RFC 9112 §6 and the classic smuggling obfuscations (Envoy's codec tests,
/// http-garden): CL/TE combinations, transfer-coding spellings, control bytes, obs-fold, bare
/// CR/LF, chunk-size tricks, pipelining after an error.
@Suite("Framing conformance", .onBlockingThreads, .timeLimit(.minutes(3)))
struct FramingSuiteTests {
    static let allowLoopback = ["--allow-destination", "127.0.0.0/8"]
    static let via = "Via: 1.1 httpdns-proxy\r\n"

    /// One request case. `request` and `forwarded` use "ORIGIN" for the origin's host:port.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var request: String
        var status: Int
        /// Exactly what the origin must receive; nil: nothing at all.
        var forwarded: String?
        /// The proxy must close the client connection after its answer.
        var closes: Bool

        var testDescription: String { name }
    }

    static func bytes(_ text: String, origin: WireOrigin) -> [UInt8] {
        Array(text.replacingOccurrences(of: "ORIGIN", with: origin.authority).utf8)
    }

    static func post(_ fields: String, body: String, version: String = "1.1") -> String {
        "POST http://ORIGIN/x HTTP/\(version)\r\nHost: ORIGIN\r\n\(fields)\r\n\(body)"
    }

    static func forwardedPost(_ framing: String, body: String) -> String {
        "POST /x HTTP/1.1\r\nHost: ORIGIN\r\n\(framing)\(via)\r\n\(body)"
    }

    static let chunkedHello = "5\r\nhello\r\n0\r\n\r\n"
    static let forwardedChunkedHello = forwardedPost("Transfer-Encoding: chunked\r\n", body: chunkedHello)

    static func rejected(_ name: String, _ fields: String, body: String = chunkedHello, status: Int = 400, version: String = "1.1") -> Case {
        Case(name: name, request: post(fields, body: body, version: version), status: status, forwarded: nil, closes: true)
    }

    static let cases: [Case] = [
        // Accepted framings: the proxy writes its own framing field.
        Case(name: "content-length", request: post("Content-Length: 5\r\n", body: "hello"), status: 200,
             forwarded: forwardedPost("Content-Length: 5\r\n", body: "hello"), closes: false),
        Case(name: "content-length with leading zeros is canonical", request: post("Content-Length: 005\r\n", body: "hello"), status: 200,
             forwarded: forwardedPost("Content-Length: 5\r\n", body: "hello"), closes: false),
        Case(name: "content-length zero", request: post("Content-Length: 0\r\n", body: ""), status: 200,
             forwarded: forwardedPost("Content-Length: 0\r\n", body: ""), closes: false),
        Case(name: "chunked", request: post("Transfer-Encoding: chunked\r\n", body: chunkedHello), status: 200,
             forwarded: forwardedChunkedHello, closes: false),
        Case(name: "chunked upper case", request: post("Transfer-Encoding: CHUNKED\r\n", body: chunkedHello), status: 200,
             forwarded: forwardedChunkedHello, closes: false),
        Case(name: "chunked with spaces around", request: post("Transfer-Encoding:   chunked  \r\n", body: chunkedHello), status: 200,
             forwarded: forwardedChunkedHello, closes: false),
        Case(name: "chunked after a tab", request: post("Transfer-Encoding:\tchunked\r\n", body: chunkedHello), status: 200,
             forwarded: forwardedChunkedHello, closes: false),
        Case(name: "chunk extensions are dropped", request: post("Transfer-Encoding: chunked\r\n", body: "5;name=value\r\nhello\r\n0;x\r\n\r\n"),
             status: 200, forwarded: forwardedChunkedHello, closes: false),
        Case(name: "allowed trailers pass, forbidden ones are dropped",
             request: post("Transfer-Encoding: chunked\r\n", body: "5\r\nhello\r\n0\r\nX-Sum: 1\r\nContent-Type: evil\r\nSet-Cookie: a=b\r\nHost: evil\r\n\r\n"),
             status: 200, forwarded: forwardedPost("Transfer-Encoding: chunked\r\n", body: "5\r\nhello\r\n0\r\nX-Sum: 1\r\n\r\n"), closes: false),
        Case(name: "hop-by-hop fields and the fields Connection names are dropped",
             request: post("Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nProxy-Authorization: Basic eDp5\r\nX-Keep: 1\r\nContent-Length: 2\r\n", body: "hi"),
             status: 200, forwarded: "POST /x HTTP/1.1\r\nX-Keep: 1\r\nHost: ORIGIN\r\nContent-Length: 2\r\n\(via)\r\nhi", closes: false),
        Case(name: "options max-forwards is decremented",
             request: "OPTIONS http://ORIGIN/x HTTP/1.1\r\nHost: ORIGIN\r\nMax-Forwards: 3\r\n\r\n", status: 200,
             forwarded: "OPTIONS /x HTTP/1.1\r\nHost: ORIGIN\r\nMax-Forwards: 2\r\n\(via)\r\n", closes: false),
        Case(name: "trace max-forwards 0 is answered by the proxy",
             request: "TRACE http://ORIGIN/x HTTP/1.1\r\nHost: ORIGIN\r\nMax-Forwards: 0\r\n\r\n", status: 200, forwarded: nil, closes: true),

        // Transfer codings the proxy does not implement: 501 (RFC 9112 §6.1).
        rejected("gzip then chunked", "Transfer-Encoding: gzip, chunked\r\n", status: 501),
        rejected("gzip and chunked on two lines", "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", status: 501),
        rejected("deflate then chunked without space", "Transfer-Encoding: deflate,chunked\r\n", status: 501),
        // The issue's reproduction: the smuggled request must not reach the origin.
        rejected("reproduction: gzip, chunked with a smuggled request", "Transfer-Encoding: gzip, chunked\r\n",
                 body: "3b\r\n0\r\n\r\nGET /SMUGGLED HTTP/1.1\r\nHost: ORIGIN\r\n\r\n\r\n\r\n0\r\n\r\n", status: 501),

        // Ambiguous or faulty framing: 400 and close (RFC 9112 §6.3).
        rejected("chunked twice", "Transfer-Encoding: chunked, chunked\r\n"),
        rejected("chunked twice on two lines", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
        rejected("chunked not last", "Transfer-Encoding: chunked, identity\r\n"),
        rejected("identity", "Transfer-Encoding: identity\r\n"),
        rejected("gzip only", "Transfer-Encoding: gzip\r\n"),
        rejected("xchunked", "Transfer-Encoding: xchunked\r\n"),
        rejected("chunkedx", "Transfer-Encoding: chunkedx\r\n"),
        rejected("empty transfer-encoding", "Transfer-Encoding:\r\n"),
        rejected("transfer-encoding of commas", "Transfer-Encoding: ,\r\n"),
        rejected("chunked with a parameter", "Transfer-Encoding: chunked;x=1\r\n"),
        rejected("vertical tab after chunked", "Transfer-Encoding: chunked\u{0B}\r\n"),
        rejected("NUL inside chunked", "Transfer-Encoding: chun\u{00}ked\r\n"),
        rejected("form feed before chunked", "Transfer-Encoding: \u{0C}chunked\r\n"),
        rejected("space before the colon", "Transfer-Encoding : chunked\r\n"),
        rejected("obs-fold continuation of transfer-encoding", "Transfer-Encoding:\r\n chunked\r\n"),
        rejected("leading space before the field name (obs-fold)", "X-A: 1\r\n Transfer-Encoding: chunked\r\n"),
        rejected("leading tab before the field name (obs-fold)", "X-A: 1\r\n\tTransfer-Encoding: chunked\r\n"),
        rejected("transfer-encoding then content-length", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"),
        rejected("content-length then transfer-encoding", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"),
        rejected("transfer-encoding on HTTP/1.0", "Transfer-Encoding: chunked\r\n", version: "1.0"),
        rejected("duplicate content-length, same value", "Content-Length: 5\r\nContent-Length: 5\r\n", body: "hello"),
        rejected("duplicate content-length, different values", "Content-Length: 5\r\nContent-Length: 6\r\n", body: "hello!"),
        rejected("content-length with plus sign", "Content-Length: +5\r\n", body: "hello"),
        rejected("negative content-length", "Content-Length: -1\r\n", body: "hello"),
        rejected("content-length list", "Content-Length: 5, 5\r\n", body: "hello"),
        rejected("hex content-length", "Content-Length: 0x5\r\n", body: "hello"),
        rejected("content-length with space inside", "Content-Length: 5 5\r\n", body: "hello"),
        rejected("overflowing content-length", "Content-Length: 99999999999999999999999\r\n", body: "hello"),
        rejected("chunk-size overflow", "Transfer-Encoding: chunked\r\n", body: "FFFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n"),
        rejected("chunk size not hex", "Transfer-Encoding: chunked\r\n", body: "zz\r\nhello\r\n0\r\n\r\n"),
        rejected("chunk data longer than its size", "Transfer-Encoding: chunked\r\n", body: "5\r\nhelloX\r\n0\r\n\r\n"),
        Case(name: "bare LF line endings", request: "POST http://ORIGIN/x HTTP/1.1\nHost: ORIGIN\nContent-Length: 5\n\nhello",
             status: 400, forwarded: nil, closes: true),
        Case(name: "bare CR inside a field", request: "GET http://ORIGIN/x HTTP/1.1\r\nHost: ORIGIN\r\nX-A: 1\rTransfer-Encoding: chunked\r\n\r\n",
             status: 400, forwarded: nil, closes: true),
        Case(name: "pipelined request after a rejected one is never read",
             request: post("Transfer-Encoding: gzip, chunked\r\n", body: chunkedHello) + "GET http://ORIGIN/second HTTP/1.1\r\nHost: ORIGIN\r\n\r\n",
             status: 501, forwarded: nil, closes: true),
        Case(name: "request target longer than 8 KiB", request: "GET http://ORIGIN/\(String(repeating: "a", count: 9000)) HTTP/1.1\r\nHost: ORIGIN\r\n\r\n",
             status: 414, forwarded: nil, closes: true),
        Case(name: "more than 256 fields",
             request: "GET http://ORIGIN/x HTTP/1.1\r\nHost: ORIGIN\r\n" + String(repeating: "X-A: b\r\n", count: 300) + "\r\n",
             status: 431, forwarded: nil, closes: true),
    ]

    @Test(arguments: cases)
    func request(_ c: Case) async throws {
        let origin = try await WireOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        try client.send(Self.bytes(c.request, origin: origin))
        let response = try client.readResponse(requestMethod: c.request.hasPrefix("TRACE") ? "TRACE" : "POST")
        #expect(response.statusCode == c.status, "\(c.name): \(response.head)\n\(response.bodyText)\n\(proxy.diagnostics)")
        if c.status >= 400 {
            #expect(!response.bodyText.isEmpty, "an error body must say why")
            #expect(response.head.header("x-content-type-options") == "nosniff")
        }
        if c.closes {
            #expect(try client.readToEOF(timeout: .seconds(10)).isEmpty, "\(c.name): bytes after the answer")
        }
        if let forwarded = c.forwarded {
            let expected = Self.bytes(forwarded, origin: origin)
            let got = await origin.waitForBytes(expected.count)
            #expect(
                got == expected,
                "\(c.name): origin received\n\(String(decoding: got, as: UTF8.self).debugDescription)\nexpected\n\(String(decoding: expected, as: UTF8.self).debugDescription)"
            )
        } else {
            // The proxy answered and closed: anything forwarded would have been sent before that.
            #expect(origin.allReceived.isEmpty, "\(c.name): origin received \(String(decoding: origin.allReceived, as: UTF8.self).debugDescription)")
        }
    }

    /// A chunked body whose last chunk is not yet terminated is not complete: no answer until the
    /// final CRLF arrives.
    @Test func missingFinalCRLFWaitsForIt() async throws {
        let origin = try await WireOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port, timeout: .seconds(10))
        defer { client.close() }
        try client.send(Self.bytes(Self.post("Transfer-Encoding: chunked\r\n", body: "5\r\nhello\r\n0\r\n"), origin: origin))
        // The origin answers only complete requests: the head and the chunk arrive, the end does not.
        let partial = Self.bytes(Self.forwardedPost("Transfer-Encoding: chunked\r\n", body: "5\r\nhello\r\n"), origin: origin)
        #expect(await origin.waitForBytes(partial.count) == partial)
        #expect(client.bufferedCount == 0)
        try client.send("\r\n")
        let response = try client.readResponse()
        #expect(response.statusCode == 200)
        #expect(await origin.waitForBytes(partial.count + 5) == partial + Array("0\r\n\r\n".utf8))
    }

    @Test func pipelinedRequestsAreForwardedAndAnsweredInOrder() async throws {
        let origin = try await WireOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        try client.send(Self.bytes(
            "GET http://ORIGIN/1 HTTP/1.1\r\nHost: ORIGIN\r\n\r\nPOST http://ORIGIN/2 HTTP/1.1\r\nHost: ORIGIN\r\nContent-Length: 2\r\n\r\nhi",
            origin: origin))
        #expect(try client.readResponse().statusCode == 200)
        #expect(try client.readResponse().statusCode == 200)
        let first = Self.bytes("GET /1 HTTP/1.1\r\nHost: ORIGIN\r\n\(Self.via)\r\n", origin: origin)
        let second = Self.bytes("POST /2 HTTP/1.1\r\nHost: ORIGIN\r\nContent-Length: 2\r\n\(Self.via)\r\nhi", origin: origin)
        _ = await origin.waitForBytes(first.count + second.count)
        // The first connection goes back to the pool only once its read is over (so stray bytes
        // after a response are seen first); the pipelined request, started inside that read,
        // gets a connection of its own.
        #expect(origin.received(0) == first)
        #expect(origin.received(1) == second)
    }

    @Test func http10KeepAlive() async throws {
        let origin = try await WireOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        for path in ["/a", "/b"] {
            try client.send(Self.bytes("GET http://ORIGIN\(path) HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", origin: origin))
            let response = try client.readResponse()
            #expect(response.head.statusLine == "HTTP/1.0 200 OK")
            #expect(response.head.tokens("connection") == ["keep-alive"])
            #expect(response.bodyText == "ok")
        }
        let expected = Self.bytes(
            "GET /a HTTP/1.1\r\nHost: ORIGIN\r\nVia: 1.0 httpdns-proxy\r\n\r\nGET /b HTTP/1.1\r\nHost: ORIGIN\r\nVia: 1.0 httpdns-proxy\r\n\r\n", origin: origin)
        #expect(await origin.waitForBytes(expected.count) == expected)
    }

    /// The origin answers before the upload is complete: the client gets the answer and the
    /// connection closes (the rest of the body cannot be skipped safely).
    @Test func earlyResponseDuringAnUpload() async throws {
        let origin = try await WireOrigin.start(.script([.send(Array("HTTP/1.1 413 Payload Too Large\r\nContent-Length: 4\r\n\r\nbig!".utf8))]))
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        try client.send(Self.bytes(Self.post("Content-Length: 100000\r\n", body: "first bytes"), origin: origin))
        let response = try client.readResponse(requestMethod: "POST")
        #expect(response.statusCode == 413)
        #expect(response.bodyText == "big!")
        #expect(try client.readToEOF(timeout: .seconds(10)).isEmpty)
        #expect(await origin.waitForClosed(1), "the upstream connection must be closed, not pooled")
    }

    // MARK: - responses

    struct ResponseCase: Sendable, CustomTestStringConvertible {
        var name: String
        var response: String
        var status: Int
        var testDescription: String { name }
    }

    static let invalidResponses: [ResponseCase] = [
        ResponseCase(name: "content-length and transfer-encoding",
                     response: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", status: 502),
        ResponseCase(name: "duplicate content-length", response: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", status: 502),
        ResponseCase(name: "gzip, chunked", response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", status: 502),
        ResponseCase(name: "gzip only", response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nhello", status: 502),
        ResponseCase(name: "transfer-encoding on HTTP/1.0", response: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", status: 502),
        ResponseCase(name: "101 nobody asked for", response: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: evil\r\nConnection: upgrade\r\n\r\nraw", status: 502),
        ResponseCase(name: "a 1 MB head", response: "HTTP/1.1 200 OK\r\nX-Big: \(String(repeating: "a", count: 1 << 20))\r\nContent-Length: 0\r\n\r\n", status: 502),
        ResponseCase(name: "bad status line", response: "HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n", status: 502),
    ]

    @Test(arguments: invalidResponses)
    func invalidResponse(_ c: ResponseCase) async throws {
        let origin = try await WireOrigin.start(.script([.send(Array(c.response.utf8))]))
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        try client.send(Self.bytes("GET http://ORIGIN/x HTTP/1.1\r\nHost: ORIGIN\r\n\r\n", origin: origin))
        let response = try client.readResponse()
        #expect(response.statusCode == c.status, "\(c.name): \(response.head)\n\(response.bodyText)")
        #expect(response.head.header("x-proxy-error") == "invalid_response", "\(response.head)")
        #expect(await origin.waitForClosed(1), "\(c.name): the upstream connection must be closed")
        #expect(origin.connectionCount == 1, "\(c.name): an invalid response is not retried")
    }

    struct StrayCase: Sendable, CustomTestStringConvertible {
        var name: String
        var method: String
        /// The first response, then bytes that must never be taken for the next response.
        var first: String
        var stray: String
        var status: Int
        var testDescription: String { name }
    }

    static let strayBytes: [StrayCase] = [
        StrayCase(name: "204 followed by a response", method: "GET", first: "HTTP/1.1 204 No Content\r\n\r\n",
                  stray: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEVIL!", status: 204),
        StrayCase(name: "304 followed by a body", method: "GET", first: "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
                  stray: "EVIL!", status: 304),
        StrayCase(name: "HEAD response followed by its body", method: "HEAD", first: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
                  stray: "EVIL!", status: 200),
        StrayCase(name: "body longer than content-length", method: "GET", first: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                  stray: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEVIL!", status: 200),
        StrayCase(name: "partial response head after a response", method: "GET", first: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                  stray: "HTTP/1.1 200 OK\r\nContent-Le", status: 200),
    ]

    /// Bytes after a response's end (same write) close the upstream connection: the next request,
    /// from another client, goes on a new connection and gets its own answer.
    @Test(arguments: strayBytes)
    func bytesAfterAResponseAreNeverTheNextResponse(_ c: StrayCase) async throws {
        let origin = try await WireOrigin.start(.script([
            .send(Array((c.first + c.stray).utf8)),
            .send(Array("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood".utf8)),
        ]))
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let first = try RawClient(port: proxy.port)
        defer { first.close() }
        try first.send(Self.bytes("\(c.method) http://ORIGIN/1 HTTP/1.1\r\nHost: ORIGIN\r\n\r\n", origin: origin))
        let answer = try first.readResponse(requestMethod: c.method)
        #expect(answer.statusCode == c.status, "\(c.name): \(answer.head)")
        #expect(!answer.bodyText.contains("EVIL"))
        #expect(await origin.waitForClosed(1), "\(c.name): the upstream connection with stray bytes must be closed")

        let second = try RawClient(port: proxy.port)
        defer { second.close() }
        try second.send(Self.bytes("GET http://ORIGIN/2 HTTP/1.1\r\nHost: ORIGIN\r\n\r\n", origin: origin))
        let next = try second.readResponse()
        #expect(next.statusCode == 200)
        #expect(next.bodyText == "good", "\(c.name): the next client got \(next.bodyText.debugDescription)")
        #expect(origin.connectionCount == 2)
    }

    @Test func interimResponsesAreForwardedInOrder() async throws {
        let origin = try await WireOrigin.start(.script([
            .send(Array("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8))
        ]))
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        try client.send(Self.bytes("GET http://ORIGIN/x HTTP/1.1\r\nHost: ORIGIN\r\n\r\n", origin: origin))
        #expect(try client.readHead().statusCode == 100)
        let hints = try client.readHead()
        #expect(hints.statusCode == 103)
        #expect(hints.header("link") == "</a.css>; rel=preload")
        let final = try client.readResponse()
        #expect(final.statusCode == 200)
        #expect(final.bodyText == "ok")
    }

    @Test func responseTrailersAreFiltered() async throws {
        let origin = try await WireOrigin.start(.script([
            .send(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Ok\r\n\r\n2\r\nok\r\n0\r\nX-Ok: 1\r\nSet-Cookie: a=b\r\nAuthorization: x\r\n\r\n".utf8))
        ]))
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        try client.send(Self.bytes("GET http://ORIGIN/x HTTP/1.1\r\nHost: ORIGIN\r\nTE: trailers\r\n\r\n", origin: origin))
        let head = try client.readHead()
        #expect(head.statusCode == 200)
        #expect(head.tokens("transfer-encoding") == ["chunked"])
        let rest = try client.read(exactly: "2\r\nok\r\n0\r\nX-Ok: 1\r\n\r\n".utf8.count)
        #expect(String(decoding: rest, as: UTF8.self) == "2\r\nok\r\n0\r\nX-Ok: 1\r\n\r\n")
    }

    /// The proxy never dials its own listeners, whatever --allow-destination allows.
    @Test func ownListenersAreNeverDialed() throws {
        let proxy = try ProxyProcess.launch(Self.allowLoopback + ["--allow-destination", "::/0", "--connect-ports", "443"])
        defer { proxy.stop() }
        for target in [
            "http://127.0.0.1:\(proxy.adminPort)/healthz", "http://127.0.0.1:\(proxy.port)/", "http://[::ffff:127.0.0.1]:\(proxy.adminPort)/cache",
            "http://0.0.0.0:\(proxy.adminPort)/", "http://127.0.0.2:\(proxy.adminPort)/", "http://localhost:\(proxy.adminPort)/",
        ] {
            let client = try RawClient(port: proxy.port)
            defer { client.close() }
            try client.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.statusCode == 403, "\(target): \(response.head)\n\(response.bodyText)")
            #expect(response.bodyText.contains("own listener"), "\(target): \(response.bodyText)")
        }
        // CONNECT to the admin port, with that port allowed for tunnels.
        let adminPort = try Loopback.unusedPort(host: "127.0.0.1")
        let tunneling = try ProxyProcess.launch(
            Self.allowLoopback + ["--admin-listen", "127.0.0.1:\(adminPort)", "--connect-ports", "443,\(adminPort)"])
        defer { tunneling.stop() }
        #expect(tunneling.adminPort == adminPort)
        let client = try RawClient(port: tunneling.port)
        defer { client.close() }
        try client.send("CONNECT 127.0.0.1:\(adminPort) HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try client.readResponse(requestMethod: "CONNECT")
        #expect(response.statusCode == 403, "\(response.head)")
    }

    @Test func errorBodiesEscapeWhatTheyEcho() throws {
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        try client.send("GET http://127.0.0.1:99999'%3Cscript%3E/ HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.statusCode == 400)
        #expect(response.head.header("x-content-type-options") == "nosniff")
        #expect(response.bodyText.contains("'99999\\x27%3Cscript%3E'"), "the quote in the target is escaped: \(response.bodyText)")
        #expect(response.bodyText.utf8.count < 512)
    }
}
