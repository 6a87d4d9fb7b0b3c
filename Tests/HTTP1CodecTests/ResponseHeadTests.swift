import HTTP1Codec
import HTTP1CodecOracle
import NIOCore
import NIOHTTP1
import ProxyHTTP
import Testing

/// Response heads and their framing (RFC 9112 §6.3), with the request method as context, and the
/// 502 reasons checked against today's.
@Suite struct ResponseHeadTests {
    static func todayUnparseable(_ error: HTTPParserError) -> String? { RequestParseFailure.invalidResponseReason(error) }

    @Test func contentLengthBody() {
        let t = decode(response("HTTP/1.1 200 OK", "Content-Length: 5\r\n", body: "hello"), .response)
        #expect(t.outcome == .clean && t.bodies == ["hello"] && t.messages[0].ended)
        #expect(t.messages[0].status == 200)
    }

    @Test func chunkedBodyWithTrailers() {
        let t = decode(response("HTTP/1.1 200 OK", "Transfer-Encoding: chunked\r\n", body: "2\r\nok\r\n0\r\nX-Sum: 1\r\n\r\n"), .response)
        #expect(t.bodies == ["ok"] && t.messages[0].trailers == ["X-Sum: 1"] && t.outcome == .clean)
    }

    @Test func bodyUntilClose() {
        let t = decode(response("HTTP/1.0 200 OK", "", body: "all of it"), .response, splits: [20])
        #expect(t.bodies == ["all of it"] && t.messages[0].ended && t.outcome == .clean)
    }

    @Test(arguments: [(DifferentialInput.Method.HEAD, "HTTP/1.1 200 OK"), (.GET, "HTTP/1.1 204 No Content"), (.GET, "HTTP/1.1 304 Not Modified")])
    func noBodyWhateverTheFieldsSay(_ method: DifferentialInput.Method, _ status: String) {
        let t = decode(response(status, "Content-Length: 5\r\nX-A: 1\r\n"), .response, method: method)
        #expect(t.messages.count == 1 && t.messages[0].body.isEmpty && t.messages[0].ended && t.outcome == .clean)
        // A HEAD response may advertise the coding a GET would have had.
        let coded = decode(response(status, "Transfer-Encoding: gzip, chunked\r\n"), .response, method: method)
        #expect(coded.outcome == .clean)
        // Its body would be bytes after the response.
        let stray = decode(response(status, "Content-Length: 5\r\n", body: "EVIL!"), .response, method: method)
        #expect(stray.reason == "the origin sent bytes after the end of its response")
    }

    @Test func interimResponsesPrecedeTheFinalOne() {
        let t = decode("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", .response)
        #expect(t.messages.map(\.status) == [100, 103, 200])
        #expect(t.messages.map(\.ended) == [false, false, true])
        #expect(t.bodies == ["", "", "ok"])
    }

    @Test func switchingProtocols() {
        let unasked = decode("HTTP/1.1 101 Switching Protocols\r\nUpgrade: evil\r\nConnection: upgrade\r\n\r\nraw", .response)
        #expect(unasked.reason == "switched protocols (101) without being asked to")
        let asked = decode("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\nraw", .response, upgrade: true)
        #expect(asked.messages.count == 1 && asked.outcome == .stopped("tunnel"))
    }

    @Test func connectAnswers() {
        // A 2xx makes a tunnel: its framing fields are ignored (RFC 9110 §9.3.6).
        let ok = decode("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\u{16}\u{03}", .response, method: .CONNECT)
        #expect(ok.messages.count == 1 && ok.outcome == .stopped("tunnel"))
        // Any other answer is an ordinary response with a body.
        let refused = decode("HTTP/1.1 407 Proxy Auth\r\nContent-Length: 4\r\n\r\nnope", .response, method: .CONNECT)
        #expect(refused.bodies == ["nope"] && refused.outcome == .clean)
    }

    @Test(arguments: [
        ("Transfer-Encoding: gzip, chunked\r\n", "unsupported transfer coding 'gzip, chunked'"),
        ("Transfer-Encoding: gzip\r\n", "unsupported transfer coding 'gzip'"),
        ("Transfer-Encoding:\r\n", "unsupported transfer coding ''"),
        ("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "unsupported transfer coding 'chunked, chunked'"),
    ])
    func unrelayableCodings(_ fields: String, _ reason: String) throws {
        var decoder = MessageDecoder(role: .response)
        decoder.expectResponse(ResponseContext(method: .get))
        var buffer = ByteBuffer(string: response("HTTP/1.1 200 OK", fields))
        #expect(throws: HTTP1CodecError(.invalidResponse, reason, isUnrelayable: true)) { try decoder.next(&buffer) }
        // Today's text for the same head.
        let today = try #require(Self.todayRewrite(fields))
        #expect(today == "the origin sent a response that cannot be relayed: " + reason)
    }

    @Test func transferEncodingOnHTTP10() {
        let t = decode(response("HTTP/1.0 200 OK", "Transfer-Encoding: chunked\r\n", body: "0\r\n\r\n"), .response)
        #expect(t.reason == "Transfer-Encoding in an HTTP/1.0 response")
    }

    static func todayRewrite(_ fields: String) -> String? {
        var headers = HTTPHeaders()
        for line in fields.split(separator: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            headers.add(name: String(parts[0]), value: parts.count > 1 ? String(parts[1]).trimmingSpaces : "")
        }
        do {
            _ = try MessageRewriter.rewriteResponse(
                HTTPResponseHead(version: .http1_1, status: .ok, headers: headers), requestMethod: .GET, clientVersion: .http1_1,
                clientKeepAlive: true, isUpgradeResponse: false, via: ViaHeader(pseudonym: "t")
            )
            return nil
        } catch {
            return error.message
        }
    }

    @Test(arguments: [
        ("HTTP/1.1 2OO OK\r\n\r\n", HTTPParserError.invalidStatus),
        ("HTTP/1.1 20 OK\r\n\r\n", .invalidStatus),
        ("HTTP/1.1 2000 OK\r\n\r\n", .invalidStatus),
        ("HTTP/1.1 099 Low\r\n\r\n", .invalidStatus),
        ("HTTP/1.1 052 Low\r\n\r\n", .invalidStatus),
        ("HTTP/1.1 600 High\r\n\r\n", .invalidStatus),
        ("HTTP/1.1 200 O\u{01}K\r\n\r\n", .invalidStatus),
        ("HTTP/2.0 200 OK\r\n\r\n", .invalidVersion),
        ("HTTP/1.1  200 OK\r\n\r\n", .invalidStatus),
        ("http/1.1 200 OK\r\n\r\n", .invalidVersion),
        ("HTTP/1.1 200 OK\nContent-Length: 0\n\n", .lfExpected),
        ("HTTP/1.1 200 OK\r\nX: 1\r\n folded\r\n\r\n", .invalidHeaderToken),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", .unexpectedContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", .unexpectedContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", .invalidChunkSize),
    ])
    func unparseableResponses(_ text: String, _ flaw: HTTPParserError) {
        let t = decode(text, .response)
        #expect(t.errorKind == "invalid_response", "\(text.debugDescription): \(t)")
        #expect(t.reason == Self.todayUnparseable(flaw), "\(text.debugDescription)")
    }

    @Test func statusLineWithoutReason() {
        #expect(decode("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", .response).outcome == .clean)
        #expect(decode("HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n", .response).outcome == .clean)
    }

    @Test func headLimits() {
        let big = decode("HTTP/1.1 200 OK\r\nX-Big: \(String(repeating: "a", count: 1 << 20))\r\nContent-Length: 0\r\n\r\n", .response)
        #expect(big.reason == Self.todayUnparseable(.headerOverflow))
        let fields = String(repeating: "Set-Cookie: a=b\r\n", count: 512)
        #expect(decode(response("HTTP/1.1 200 OK", fields + "Content-Length: 0\r\n"), .response).reason == Self.todayUnparseable(.headerOverflow))
        #expect(decode(response("HTTP/1.1 200 OK", fields), .response, method: .HEAD).outcome == .clean)
    }

    @Test func bytesWithoutARequest() throws {
        var decoder = MessageDecoder(role: .response)
        var buffer = ByteBuffer(string: "HTTP/1.1 200 OK\r\n")
        #expect(throws: HTTP1CodecError(.invalidResponse, "the origin sent bytes while no request was outstanding")) {
            try decoder.next(&buffer)
        }
        // Today's verdict for bytes after a response (llhttp may see them first).
        let stray = DifferentialInput(bytes: Array("HTTP/1.1 204 No Content\r\n\r\nEVIL".utf8))
        #expect(LegacyRunner.responseTranscript(stray).errorKind == "invalid_response")
        #expect(CodecRunner.transcript(stray, role: .response).reason == "the origin sent bytes after the end of its response")
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s.removeFirst() }
        while s.last == " " || s.last == "\t" { s.removeLast() }
        return String(s)
    }
}
