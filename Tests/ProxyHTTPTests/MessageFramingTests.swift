import NIOCore
import NIOHTTP1
import Testing

@testable import ProxyKit
@testable import ProxyHTTP
@testable import ForwardProxy

/// Request and response framing decisions (RFC 9112 §6) and what the rewriter writes for them.
@Suite struct MessageFramingTests {
    private let target = try! RequestTarget.parseAbsolute("http://origin.test:8080/p")
    private let via = ViaHeader(pseudonym: "hp")

    private func rewrite(_ headers: [(String, String)], method: HTTPMethod = .POST, version: HTTPVersion = .http1_1) throws(ProxyError)
        -> MessageRewriter.RewrittenRequest
    {
        try MessageRewriter.rewriteRequest(
            HTTPRequestHead(version: version, method: method, uri: "http://origin.test:8080/p", headers: HTTPHeaders(headers)),
            target: target,
            via: via
        )
    }

    private func rejection(_ headers: [(String, String)], version: HTTPVersion = .http1_1) -> ProxyError? {
        do {
            _ = try rewrite(headers, version: version)
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        [("Transfer-Encoding", "gzip, chunked")],
        [("Transfer-Encoding", "gzip"), ("Transfer-Encoding", "chunked")],
        [("Transfer-Encoding", "deflate,chunked")],
    ])
    func otherCodingsBeforeChunkedAre501(_ headers: [(String, String)]) {
        let error = rejection(headers)
        #expect(error?.status == .notImplemented, "\(String(describing: error))")
    }

    @Test(arguments: [
        [("Transfer-Encoding", "chunked, identity")],
        [("Transfer-Encoding", "chunked, chunked")],
        [("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")],
        [("Transfer-Encoding", "gzip")],
        [("Transfer-Encoding", "xchunked")],
        [("Transfer-Encoding", "")],
        [("Transfer-Encoding", " , ")],
        [("Transfer-Encoding", "chunked;x=1")],
        [("Transfer-Encoding", "chu\u{0B}nked")],
        [("Transfer-Encoding", "chunked"), ("Content-Length", "5")],
        [("Content-Length", "5"), ("Content-Length", "5")],
        [("Content-Length", "+5")],
        [("Content-Length", "-1")],
        [("Content-Length", "5, 5")],
        [("Content-Length", "0x5")],
        [("Content-Length", "99999999999999999999999")],
        [("Content-Length", "")],
    ])
    func ambiguousFramingIs400(_ headers: [(String, String)]) {
        let error = rejection(headers)
        #expect(error?.status == .badRequest, "\(headers): \(String(describing: error))")
    }

    @Test func transferEncodingOnHTTP10Is400() {
        let error = rejection([("Transfer-Encoding", "chunked")], version: .http1_0)
        #expect(error?.status == .badRequest)
        #expect(error?.message.contains("HTTP/1.0") == true)
    }

    /// The client's own spelling never travels: one canonical `Transfer-Encoding: chunked`.
    @Test(arguments: ["chunked", "Chunked", " CHUNKED ", "\tchunked"])
    func chunkedIsWrittenByTheProxy(_ value: String) throws {
        let out = try rewrite([("X-A", "1"), ("Transfer-Encoding", value)])
        #expect(out.framing == .chunked)
        #expect(out.head.headers.filter { $0.name.lowercased() == "transfer-encoding" }.map(\.value) == ["chunked"])
        #expect(out.head.headers.map(\.name) == ["X-A", "Host", "Transfer-Encoding", "Via"])
    }

    @Test func contentLengthIsCanonical() throws {
        let out = try rewrite([("Content-Length", "007")])
        #expect(out.framing == .contentLength)
        #expect(out.head.headers["Content-Length"] == ["7"])
        let zero = try rewrite([("Content-Length", "0")])
        #expect(zero.framing == .none)
        #expect(zero.head.headers["Content-Length"] == ["0"])
    }

    @Test func maxForwardsIsDecrementedForTraceAndOptionsOnly() throws {
        let trace = try rewrite([("Max-Forwards", "3"), ("X-A", "1")], method: .TRACE)
        #expect(trace.head.headers["Max-Forwards"] == ["2"])
        #expect(trace.head.headers.map(\.name) == ["X-A", "Host", "Max-Forwards", "Via"])
        let options = try rewrite([("max-forwards", " 1 ")], method: .OPTIONS)
        #expect(options.head.headers["Max-Forwards"] == ["0"])
        let get = try rewrite([("Max-Forwards", "3")], method: .GET)
        #expect(get.head.headers["Max-Forwards"] == ["3"])
        #expect(MessageRewriter.maxForwards(HTTPHeaders([("Max-Forwards", "0")])) == 0)
        #expect(MessageRewriter.maxForwards(HTTPHeaders([("Max-Forwards", "x")])) == nil)
    }

    @Test func localTraceAnswerOmitsCredentials() {
        let head = HTTPRequestHead(
            version: .http1_1, method: .TRACE, uri: "http://a.test/",
            headers: HTTPHeaders([("Max-Forwards", "0"), ("Cookie", "s=1"), ("Authorization", "Basic x"), ("X-A", "1")])
        )
        let answer = LocalAnswer.forMaxForwardsZero(head, via: via)
        #expect(answer.head.status == .ok)
        #expect(answer.head.headers["Content-Type"] == ["message/http"])
        #expect(answer.body == "TRACE http://a.test/ HTTP/1.1\r\nMax-Forwards: 0\r\nX-A: 1\r\n\r\n")
    }

    @Test func forbiddenTrailersAreDropped() {
        let trailers = HTTPHeaders([
            ("X-Checksum", "abc"), ("Content-Length", "5"), ("Transfer-Encoding", "chunked"), ("Host", "evil"),
            ("Authorization", "Basic x"), ("Content-Type", "text/html"), ("Set-Cookie", "a=b"), ("Cookie", "c"),
            ("Cache-Control", "no-cache"), ("Proxy-Authorization", "x"), ("Content-Encoding", "gzip"), ("Trailer", "X"),
            ("Max-Forwards", "1"), ("TE", "trailers"), ("If-Match", "*"), ("Connection", "close"), ("Server-Timing", "db;dur=5"),
        ])
        let kept = MessageFraming.forwardableTrailers(trailers)
        #expect(kept?.map(\.name) == ["X-Checksum", "Server-Timing"])
        #expect(MessageFraming.forwardableTrailers(nil) == nil)
    }

    private func response(_ headers: [(String, String)], status: HTTPResponseStatus = .ok, version: HTTPVersion = .http1_1, method: HTTPMethod = .GET)
        throws(ProxyError) -> MessageRewriter.RewrittenResponse
    {
        try MessageRewriter.rewriteResponse(
            HTTPResponseHead(version: version, status: status, headers: HTTPHeaders(headers)),
            requestMethod: method, clientVersion: .http1_1, clientKeepAlive: true, isUpgradeResponse: false, via: via
        )
    }

    @Test(arguments: [
        [("Transfer-Encoding", "gzip, chunked")],
        [("Transfer-Encoding", "gzip")],
        [("Transfer-Encoding", "chunked"), ("Content-Length", "5")],
        [("Content-Length", "5"), ("Content-Length", "6")],
        [("Content-Length", "abc")],
    ])
    func unrelayableResponsesAre502(_ headers: [(String, String)]) {
        #expect(throws: ProxyError.self) { try response(headers) }
        do {
            _ = try response(headers)
        } catch {
            #expect(error.status == .badGateway)
            #expect(error.shortDescription == "invalid_response")
        }
    }

    @Test func transferEncodingOnHTTP10ResponseIs502() {
        #expect(throws: ProxyError.self) { try response([("Transfer-Encoding", "chunked")], version: .http1_0) }
    }

    /// A HEAD or 304 response may advertise what a GET would have used: no body, nothing to check.
    @Test func bodilessResponsesMayAdvertiseCodings() throws {
        let head = try response([("Transfer-Encoding", "gzip, chunked")], method: .HEAD)
        #expect(head.clientFraming == .none)
        #expect(!head.head.headers.contains(name: "Transfer-Encoding"))
        let notModified = try response([("Content-Length", "5")], status: .notModified)
        #expect(notModified.clientFraming == .none)
    }

    /// 14,000 Connection tokens and a field per token: one set lookup per field, no token × field work.
    @Test func manyConnectionTokensStripNamedFields() throws {
        let tokens = (0..<14_000).map { "x-\($0)" }
        var headers = [("Connection", tokens.joined(separator: ","))]
        headers += (0..<200).map { ("X-\($0)", "v") }
        headers.append(("X-Keep", "1"))
        let out = try rewrite(headers, method: .GET)
        #expect(out.head.headers.map(\.name) == ["X-Keep", "Host", "Via"])
    }

    @Test func sanitizedEchoIsShortAndInert() {
        let echoed = ProxyError.sanitized("<script>\"'&\\\u{01}" + String(repeating: "a", count: 500))
        #expect(!echoed.contains("<") && !echoed.contains(">") && !echoed.contains("\"") && !echoed.contains("'"))
        #expect(echoed.hasPrefix("\\x3Cscript\\x3E\\x22\\x27\\x26\\x5C\\x01"))
        #expect(echoed.hasSuffix("..."))
        #expect(echoed.utf8.count < 200)
    }
}
