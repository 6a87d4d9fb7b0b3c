import HTTP1Codec
import NIOCore
import Testing

/// The head writer: kept field lines copied as they arrived, the proxy's own fields after them,
/// and the buffer reused once the last head was written.
@Suite struct HeadWriterTests {
    let allocator = ByteBufferAllocator()

    @Test func requestHead() throws {
        let parsed = try head(
            "POST http://a.test/x HTTP/1.1\r\nHost: a.test\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\n"
                + "Proxy-Authorization: Basic eDp5\r\nX-Keep:  1 \r\nContent-Length: 2\r\nTE: trailers\r\nVia: 1.1 other\r\n\r\n"
        )
        #expect(parsed.acceptsTrailers)
        var writer = HeadWriter()
        let out = writer.requestHead(
            parsed, target: "/x", host: "a.test", framing: .contentLength(2), via: "1.1 hp",
            extraFields: [("TE", "trailers")], allocator: allocator
        )
        #expect(String(buffer: out) == "POST /x HTTP/1.1\r\nX-Keep:  1 \r\nVia: 1.1 other\r\nHost: a.test\r\nContent-Length: 2\r\nTE: trailers\r\nVia: 1.1 hp\r\n\r\n")
    }

    @Test func chunkedRequestAndDroppedMaxForwards() throws {
        let parsed = try head("OPTIONS http://a.test/ HTTP/1.1\r\nMax-Forwards: 3\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n")
        #expect(parsed.framing == .chunked && parsed.methodKind == .options)
        #expect(parsed.values(.maxForwards) == ["3"])
        var writer = HeadWriter()
        let out = writer.requestHead(
            parsed, target: "/", host: "a.test", framing: .chunked, via: "1.1 hp", extraFields: [("Max-Forwards", "2")],
            dropping: .maxForwards, allocator: allocator
        )
        #expect(String(buffer: out) == "OPTIONS / HTTP/1.1\r\nX-A: 1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\nMax-Forwards: 2\r\nVia: 1.1 hp\r\n\r\n")
    }

    @Test func upgradeKeepsUpgrade() throws {
        let parsed = try head("GET http://a.test/ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: k\r\n\r\n")
        #expect(parsed.isUpgrade)
        #expect(parsed.fields.filter(\.kept).map { parsed.string($0.name) } == ["Upgrade", "Sec-WebSocket-Key"])
        let refused = try head("GET http://a.test/ HTTP/1.1\r\nUpgrade: websocket\r\n\r\n")
        #expect(!refused.isUpgrade && refused.fields.allSatisfy { !$0.kept })
    }

    @Test func responseHead() throws {
        let parsed = try head(
            "HTTP/1.1 200 Fine\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=b\r\nContent-Length-Like: 1\r\n\r\n",
            .response
        )
        #expect(parsed.framing == .chunked && !parsed.keepAlive)
        var writer = HeadWriter()
        let out = writer.responseHead(parsed, minorVersion: 0, chunked: false, connection: "close", via: "1.1 hp", allocator: allocator)
        #expect(String(buffer: out) == "HTTP/1.0 200 Fine\r\nSet-Cookie: a=b\r\nContent-Length-Like: 1\r\nConnection: close\r\nVia: 1.1 hp\r\n\r\n")
        let length = try head("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", .response)
        let chunked = writer.responseHead(length, minorVersion: 1, chunked: true, connection: nil, via: "1.1 hp", allocator: allocator)
        #expect(String(buffer: chunked) == "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\nVia: 1.1 hp\r\n\r\n")
    }

    /// A field the proxy sets replaces every line of that name, whatever its case; other lines
    /// keep their order and bytes.
    @Test func aReplacedFieldDropsTheHeadsOwn() throws {
        let parsed = try head("HTTP/1.1 200 OK\r\nX-Id: a\r\nX-A: 1\r\nx-id:b\r\nX-Idle: 2\r\n\r\n", .response)
        var writer = HeadWriter()
        let out = writer.responseHead(
            parsed, minorVersion: 1, chunked: false, connection: nil, via: "1.1 hp", replacing: ("X-ID", "r-1"), allocator: allocator
        )
        #expect(String(buffer: out) == "HTTP/1.1 200 OK\r\nX-A: 1\r\nX-Idle: 2\r\nVia: 1.1 hp\r\nX-ID: r-1\r\n\r\n")
        #expect(parsed.fields.allSatisfy { $0.kept }, "the head itself is unchanged")
    }

    /// Many Connection tokens: one set lookup per field, the same verdicts.
    @Test func manyConnectionTokens() throws {
        let tokens = (0..<2000).map { "x-\($0)" }.joined(separator: ",")
        let fields = (0..<200).map { "X-\($0): v\r\n" }.joined()
        let parsed = try head("GET http://a.test/ HTTP/1.1\r\nConnection: \(tokens)\r\n\(fields)X-Keep: 1\r\n\r\n")
        #expect(parsed.fields.filter(\.kept).map { parsed.string($0.name) } == ["X-Keep"])
    }

    @Test func theBufferIsReused() throws {
        let parsed = try head("GET http://a.test/ HTTP/1.1\r\nX-A: 1\r\n\r\n")
        var writer = HeadWriter()
        var first: UnsafeRawPointer?
        do {
            let out = writer.requestHead(parsed, target: "/", host: "a.test", framing: .none, via: "1.1 hp", allocator: allocator)
            first = out.withUnsafeReadableBytes { $0.baseAddress }
        }
        let second = writer.requestHead(parsed, target: "/", host: "a.test", framing: .none, via: "1.1 hp", allocator: allocator)
        #expect(second.withUnsafeReadableBytes { $0.baseAddress } == first)
    }
}
