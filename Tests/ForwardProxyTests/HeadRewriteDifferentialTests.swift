import HTTP1Codec
import HTTP1CodecOracle
import NIOCore
import NIOHTTP1
import Testing

@testable import ForwardProxy
@testable import ProxyHTTP

/// The forward path writes heads from the codec's bytes (`RequestHead.forOrigin`,
/// `ResponseHead.relayed`); `MessageRewriter` makes the same decisions on NIOHTTP1's heads and
/// stays as the reference. Over generated heads both must send the same start line and the same
/// fields in the same order (compared after reading both back with the codec: spacing and the
/// reason phrase may differ, nothing else), and decide the same framing and persistence.
///
/// Known differences: obs-text in a value (the old path turned it into U+FFFD; the codec passes
/// the bytes on) and `Proxy-Connection: close` from an origin (the codec closes the upstream
/// connection on it, as llhttp did) are kept out of the pool; an HTTP/1.0 origin naming both
/// `keep-alive` and `close` is closed (close wins), which the test allows for.
@Suite struct HeadRewriteDifferentialTests {
    static let pool = [
        "Host: elsewhere.test", "X-A: 1", "X-Spaces:   padded value  ", "X-Tab:\tv", "X-Empty:", "Via: 1.1 other",
        "Connection: close", "Connection: keep-alive", "Connection: Upgrade", "Connection: x-hop, Keep-Alive", "X-Hop: dropped",
        "Upgrade: websocket", "TE: trailers", "TE: trailers;q=1, gzip", "Keep-Alive: timeout=5", "Trailer: X-Sum", "Max-Forwards: 2",
        "Max-Forwards: 0", "Max-Forwards: x", "max-forwards: 7", "Set-Cookie: a=b", "Content-Type: text/plain", "Proxy-Authorization: Basic eDp5",
        "Proxy-Authenticate: Basic", "CONNECTION: X-A", "Content-Length-Like: 1",
    ]

    /// What a head says once read back: start line (without the reason phrase) and fields.
    static func readBack(_ bytes: ByteBuffer, _ role: Role, context: ResponseContext = ResponseContext(method: .get, upgradeRequested: true)) -> String? {
        var buffer = bytes
        var decoder = MessageDecoder(role: role)
        if role == .response { decoder.expectResponse(context) }
        guard case .head(let head) = try? decoder.next(&buffer) else { return nil }
        let start = role == .request ? "\(head.methodString) \(head.targetString) 1.\(head.minorVersion)" : "1.\(head.minorVersion) \(head.status)"
        return ([start] + head.fieldList.map { "\($0.0): \($0.1)" }).joined(separator: "\n")
    }

    static func parse(_ text: String, _ role: Role, context: ResponseContext = ResponseContext(method: .get)) -> HTTP1Head? {
        var buffer = ByteBuffer(string: text)
        var decoder = MessageDecoder(role: role)
        if role == .response { decoder.expectResponse(context) }
        guard case .head(let head) = try? decoder.next(&buffer) else { return nil }
        return head
    }

    @Test func requestHeadsGoUpstreamAsTheRewriterWroteThem() throws {
        var rng = SplitMix64(seed: 35)
        let via = ViaHeader(pseudonym: "hp")
        let target = try RequestTarget.parseAbsolute("http://a.test:8080/p?q=1")
        var compared = 0
        for _ in 0..<4000 {
            let method = MessageGenerator.pick(["GET", "GET", "POST", "PUT", "HEAD", "OPTIONS", "TRACE", "DELETE", "PATCH", "FOO"], &rng)
            var fields = (0..<Int(rng.next() % 6)).map { _ in MessageGenerator.pick(Self.pool, &rng) }
            switch rng.next() % 5 {
            case 0: fields.append("Content-Length: \(MessageGenerator.pick([0, 5, 12], &rng))")
            case 1: fields.append("Transfer-Encoding: chunked")
            case 2: fields.append("Content-Length: 007")
            default: break
            }
            let version = rng.next() % 100 < 20 ? "HTTP/1.0" : "HTTP/1.1"
            let text = "\(method) http://a.test:8080/p?q=1 \(version)\r\n" + fields.map { $0 + "\r\n" }.joined() + "\r\n"
            guard let parsed = Self.parse(text, .request) else { continue }
            let client = RequestHead(parsed: parsed)
            let old = try MessageRewriter.rewriteRequest(client.converted, target: target, via: via)
            var writer = HTTPMessageWriter()
            let oldBytes = writer.head(old.head, allocator: ByteBufferAllocator())
            let new = try client.forOrigin(target: target, via: via, requestID: nil)
            guard case .outgoing(let outgoing) = new.head.storage else {
                Issue.record("not an outgoing head: \(text)")
                return
            }
            var heads = HeadWriter()
            let newBytes = outgoing.written(by: &heads, allocator: ByteBufferAllocator())
            let expected = Self.readBack(oldBytes, .request)
            #expect(expected != nil && Self.readBack(newBytes, .request) == expected, "\(text.debugDescription)")
            #expect(new.framing == old.framing && new.isUpgrade == old.isUpgrade, "\(text.debugDescription)")
            compared += 1
        }
        #expect(compared > 2000, "most generated heads are ones the codec takes: \(compared)")
    }

    @Test func responseHeadsGoToTheClientAsTheRewriterWroteThem() throws {
        var rng = SplitMix64(seed: 36)
        let via = ViaHeader(pseudonym: "hp")
        var compared = 0
        for _ in 0..<4000 {
            let status = MessageGenerator.pick([200, 200, 201, 204, 304, 404, 500, 302], &rng)
            var fields = (0..<Int(rng.next() % 6)).map { _ in MessageGenerator.pick(Self.pool, &rng) }
            switch rng.next() % 4 {
            case 0: fields.append("Content-Length: \(MessageGenerator.pick([0, 5, 12], &rng))")
            case 1: fields.append("Transfer-Encoding: chunked")
            default: break
            }
            let originVersion = rng.next() % 100 < 20 ? "HTTP/1.0" : "HTTP/1.1"
            let head = rng.next() % 100 < 20
            let request = RequestHead(head ? .HEAD : .GET, "http://a.test/", [], version: rng.next() % 100 < 25 ? .http1_0 : .http1_1)
            let keepAlive = rng.next() % 100 < 80
            let text = "\(originVersion) \(status) Whatever\r\n" + fields.map { $0 + "\r\n" }.joined() + "\r\n"
            guard let parsed = Self.parse(text, .response, context: ResponseContext(method: head ? .head : .get)) else { continue }
            let old = try MessageRewriter.rewriteResponse(
                ResponseHead(origin: parsed).converted, requestMethod: head ? .HEAD : .GET,
                clientVersion: HTTPVersion(major: 1, minor: request.minorVersion), clientKeepAlive: keepAlive, isUpgradeResponse: false, via: via
            )
            var writer = HTTPMessageWriter()
            let oldBytes = writer.head(old.head, allocator: ByteBufferAllocator())
            let new = ResponseHead.relayed(parsed, request: request, clientKeepAlive: keepAlive, via: via)
            var clientWriter = ClientResponseWriter()
            let newBytes = clientWriter.head(new.head, allocator: ByteBufferAllocator())
            let expected = Self.readBack(oldBytes, .response)
            let context = "\(text.debugDescription) to \(head ? "HEAD" : "GET") 1.\(request.minorVersion) keep-alive \(keepAlive)"
            #expect(expected != nil && Self.readBack(newBytes, .response) == expected, "\(context)")
            // An HTTP/1.0 origin naming both keep-alive and close: close wins (RFC 9112 §9.3), where
            // the old path kept the connection for the keep-alive token.
            let namesClose = fields.contains("Connection: close")
            #expect(
                new.flow.clientFraming == old.clientFraming && new.flow.closeClient == old.closeClient
                    && new.flow.upstreamWillClose == (old.upstreamWillClose || namesClose),
                "\(context)"
            )
            compared += 1
        }
        #expect(compared > 2000, "most generated heads are ones the codec takes: \(compared)")
    }
}
