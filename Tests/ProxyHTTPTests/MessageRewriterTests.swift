import NIOHTTP1
import Testing

@testable import ProxyKit
@testable import ProxyHTTP

@Suite struct MessageRewriterTests {
    private func request(_ headers: [(String, String)], method: HTTPMethod = .GET, version: HTTPVersion = .http1_1) -> HTTPRequestHead {
        HTTPRequestHead(version: version, method: method, uri: "http://origin.test:8080/p?q=1", headers: HTTPHeaders(headers))
    }

    private let target = try! RequestTarget.parseAbsolute("http://origin.test:8080/p?q=1")

    @Test func stripsHopByHopAndNamedFieldsKeepsEndToEnd() throws {
        let head = request([
            ("Host", "wrong.example"),
            ("Connection", "keep-alive, X-Hop"),
            ("X-Hop", "1"),
            ("Keep-Alive", "timeout=5"),
            ("Proxy-Connection", "keep-alive"),
            ("Proxy-Authorization", "Basic Zm9vOmJhcg=="),
            ("TE", "trailers, deflate"),
            ("Trailer", "X-Checksum"),
            ("Upgrade", "websocket"),
            ("X-Keep", "yes"),
            ("Accept", "*/*"),
        ])
        let out = try MessageRewriter.rewriteRequest(head, target: target, via: ViaHeader(pseudonym: "hp"))
        let h = out.head.headers
        for gone in ["connection", "x-hop", "keep-alive", "proxy-connection", "proxy-authorization", "trailer", "upgrade"] {
            #expect(!h.contains(name: gone), "\(gone) should be stripped")
        }
        #expect(h["TE"] == ["trailers"])
        #expect(h["X-Keep"] == ["yes"])
        #expect(h["Accept"] == ["*/*"])
        #expect(h["Host"] == ["origin.test:8080"])
        #expect(h["Via"] == ["1.1 hp"])
        #expect(out.head.uri == "/p?q=1")
        #expect(out.head.version == .http1_1)
        #expect(out.framing == .none)
        #expect(!out.isUpgrade)
    }

    @Test func connectionCannotStripFraming() throws {
        let head = request([("Connection", "content-length, host"), ("Content-Length", "3")], method: .POST)
        let out = try MessageRewriter.rewriteRequest(head, target: target, via: ViaHeader(pseudonym: "hp"))
        #expect(out.head.headers["Content-Length"] == ["3"])
        #expect(out.framing == .contentLength)
    }

    @Test func chunkedRequestIsReframedChunked() throws {
        let out = try MessageRewriter.rewriteRequest(
            request([("Transfer-Encoding", "chunked")], method: .POST), target: target, via: ViaHeader(pseudonym: "hp")
        )
        #expect(out.framing == .chunked)
        #expect(out.head.headers["Transfer-Encoding"] == ["chunked"])
    }

    @Test func invalidFramingIsRejected() {
        #expect(throws: ProxyError.self) {
            try MessageRewriter.rewriteRequest(request([("Transfer-Encoding", "gzip")], method: .POST), target: target, via: ViaHeader(pseudonym: "hp"))
        }
        #expect(throws: ProxyError.self) {
            try MessageRewriter.rewriteRequest(request([("Content-Length", "-1")], method: .POST), target: target, via: ViaHeader(pseudonym: "hp"))
        }
    }

    @Test func upgradeKeepsUpgradeFields() throws {
        let out = try MessageRewriter.rewriteRequest(
            request([("Connection", "Upgrade"), ("Upgrade", "websocket"), ("Sec-WebSocket-Key", "k")]),
            target: target,
            via: ViaHeader(pseudonym: "hp")
        )
        #expect(out.isUpgrade)
        #expect(out.head.headers["Upgrade"] == ["websocket"])
        #expect(out.head.headers["Connection"] == ["upgrade"])
        #expect(out.head.headers["Sec-WebSocket-Key"] == ["k"])
    }

    /// Field names match in any letter case, and list values are split, trimmed and compared
    /// case-insensitively.
    @Test func fieldNamesAndTokensIgnoreCase() throws {
        let out = try MessageRewriter.rewriteRequest(
            request([
                ("HOST", "wrong.example"), ("CONNECTION", " X-Hop ,, Close "), ("x-HOP", "1"), ("KEEP-ALIVE", "t=1"),
                ("te", "gzip, TRAILERS"), ("PROXY-AUTHORIZATION", "secret"), ("X-Keep", "1"),
            ]),
            target: target,
            via: ViaHeader(pseudonym: "hp")
        )
        let h = out.head.headers
        for gone in ["connection", "x-hop", "keep-alive", "proxy-authorization"] {
            #expect(!h.contains(name: gone), "\(gone) should be stripped")
        }
        #expect(h["Host"] == ["origin.test:8080"])
        #expect(h["TE"] == ["trailers"])
        #expect(h["X-Keep"] == ["1"])
    }

    /// Nothing to strip: the fields keep their order, Host is replaced, Via is appended.
    @Test func plainRequestKeepsFieldOrder() throws {
        let out = try MessageRewriter.rewriteRequest(
            request([("User-Agent", "u"), ("Host", "wrong.example"), ("Accept", "*/*"), ("Content-Length", "0")], version: .http1_0),
            target: target,
            via: ViaHeader(pseudonym: "hp")
        )
        // Content-Length is the proxy's own (canonical) field, written after Host.
        let names = out.head.headers.map(\.name)
        #expect(names == ["User-Agent", "Accept", "Host", "Content-Length", "Via"])
        #expect(out.head.headers["Host"] == ["origin.test:8080"])
        #expect(out.head.headers["Via"] == ["1.0 hp"])
        #expect(out.head.version == .http1_1)
        #expect(out.framing == .none)
    }

    @Test func viaLoopDetection() {
        #expect(MessageRewriter.viaContains(HTTPHeaders([("Via", "1.1 other, 1.1 HP (x)")]), pseudonym: "hp"))
        #expect(!MessageRewriter.viaContains(HTTPHeaders([("Via", "1.1 hpx")]), pseudonym: "hp"))
        #expect(!MessageRewriter.viaContains(HTTPHeaders(), pseudonym: "hp"))
    }

    private func response(_ status: HTTPResponseStatus, _ headers: [(String, String)], version: HTTPVersion = .http1_1) -> HTTPResponseHead {
        HTTPResponseHead(version: version, status: status, headers: HTTPHeaders(headers))
    }

    @Test func closeDelimitedBecomesChunkedFor11Clients() throws {
        let out = try MessageRewriter.rewriteResponse(
            response(.ok, [("Connection", "close")], version: .http1_0),
            requestMethod: .GET, clientVersion: .http1_1, clientKeepAlive: true, isUpgradeResponse: false, via: ViaHeader(pseudonym: "hp")
        )
        #expect(out.upstreamFraming == .closeDelimited)
        #expect(out.clientFraming == .chunked)
        #expect(out.upstreamWillClose)
        #expect(!out.closeClient)
        #expect(out.head.headers["Transfer-Encoding"] == ["chunked"])
        #expect(out.head.headers["Via"] == ["1.0 hp"])
    }

    @Test func chunkedToHTTP10ClientIsCloseDelimited() throws {
        let out = try MessageRewriter.rewriteResponse(
            response(.ok, [("Transfer-Encoding", "chunked")]),
            requestMethod: .GET, clientVersion: .http1_0, clientKeepAlive: true, isUpgradeResponse: false, via: ViaHeader(pseudonym: "hp")
        )
        #expect(out.clientFraming == .closeDelimited)
        #expect(out.closeClient)
        #expect(out.head.version == .http1_0)
        #expect(!out.head.headers.contains(name: "Transfer-Encoding"))
        #expect(out.head.headers["Connection"] == ["close"])
    }

    @Test func headResponseHasNoBodyButKeepsLength() throws {
        let out = try MessageRewriter.rewriteResponse(
            response(.ok, [("Content-Length", "1234"), ("Keep-Alive", "timeout=3"), ("Connection", "Keep-Alive, X-Hop"), ("X-Hop", "1")]),
            requestMethod: .HEAD, clientVersion: .http1_1, clientKeepAlive: true, isUpgradeResponse: false, via: ViaHeader(pseudonym: "hp")
        )
        #expect(out.clientFraming == .none)
        #expect(out.head.headers["Content-Length"] == ["1234"])
        #expect(!out.head.headers.contains(name: "Keep-Alive"))
        #expect(!out.head.headers.contains(name: "X-Hop"))
        #expect(!out.upstreamWillClose)
    }

    @Test func http10ClientKeepAliveIsAnnounced() throws {
        let out = try MessageRewriter.rewriteResponse(
            response(.ok, [("Content-Length", "5")]),
            requestMethod: .GET, clientVersion: .http1_0, clientKeepAlive: true, isUpgradeResponse: false, via: ViaHeader(pseudonym: "hp")
        )
        #expect(out.head.headers["Connection"] == ["keep-alive"])
        #expect(!out.closeClient)
    }

    @Test func switchingProtocolsKeepsUpgrade() throws {
        let out = try MessageRewriter.rewriteResponse(
            response(.switchingProtocols, [("Upgrade", "websocket"), ("Connection", "upgrade")]),
            requestMethod: .GET, clientVersion: .http1_1, clientKeepAlive: true, isUpgradeResponse: true, via: ViaHeader(pseudonym: "hp")
        )
        #expect(out.head.headers["Upgrade"] == ["websocket"])
        #expect(out.head.headers["Connection"] == ["upgrade"])
        #expect(out.clientFraming == .none)
    }
}
