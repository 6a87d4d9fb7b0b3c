import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import ProxyHTTP

/// `HTTPMessageWriter` replaced NIO's HTTP encoders (automatic framing off) on both sides of an
/// exchange: for every message here the bytes must be exactly the ones the encoder wrote.
@Suite struct HTTPMessageWriterTests {
    private let allocator = ByteBufferAllocator()

    private enum Part {
        case body(String)
        case end(HTTPHeaders?)
    }

    /// What NIO's encoder writes for a message.
    private func encoded(_ start: HTTPServerResponsePart, _ parts: [Part]) throws -> String {
        var configuration = HTTPResponseEncoder.Configuration()
        configuration.automaticallySetFramingHeaders = false
        let channel = EmbeddedChannel(handler: HTTPResponseEncoder(configuration: configuration))
        try channel.writeOutbound(start)
        for part in parts {
            switch part {
            case .body(let text): try channel.writeOutbound(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: text))))
            case .end(let trailers): try channel.writeOutbound(HTTPServerResponsePart.end(trailers))
            }
        }
        return try drain(channel)
    }

    private func encoded(_ head: HTTPRequestHead, _ parts: [Part]) throws -> String {
        var configuration = HTTPRequestEncoder.Configuration()
        configuration.automaticallySetFramingHeaders = false
        let channel = EmbeddedChannel(handler: HTTPRequestEncoder(configuration: configuration))
        try channel.writeOutbound(HTTPClientRequestPart.head(head))
        for part in parts {
            switch part {
            case .body(let text): try channel.writeOutbound(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(string: text))))
            case .end(let trailers): try channel.writeOutbound(HTTPClientRequestPart.end(trailers))
            }
        }
        return try drain(channel)
    }

    private func drain(_ channel: EmbeddedChannel) throws -> String {
        var out = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let buffer) = data else { continue }
            out += String(buffer: buffer)
        }
        _ = try channel.finish()
        return out
    }

    /// What the writer produces for the same message.
    private func written(_ write: (inout HTTPMessageWriter) -> ByteBuffer, _ parts: [Part]) -> String {
        var writer = HTTPMessageWriter()
        var out = String(buffer: write(&writer))
        for part in parts {
            switch part {
            case .body(let text):
                writer.body(ByteBuffer(string: text), allocator: allocator) { out += String(buffer: $0) }
            case .end(let trailers):
                if let end = writer.end(trailers, allocator: allocator) { out += String(buffer: end) }
            }
        }
        return out
    }

    private static let trailers: HTTPHeaders = ["X-Checksum": "abc", "X-Other": "1"]

    private static let responses: [(HTTPResponseHead, [Part])] = [
        (HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "5"]), [.body("hello"), .end(nil)]),
        (HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Transfer-Encoding": "chunked"]), [.body("hello"), .body(""), .body("0123456789abcdef0"), .end(nil)]),
        (HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Transfer-Encoding": "chunked"]), [.body("x"), .end(trailers)]),
        (HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Transfer-Encoding": "gzip, chunked"]), [.body("x"), .end(nil)]),
        (HTTPResponseHead(version: .http1_1, status: .ok, headers: ["transfer-encoding": "chunked", "Transfer-Encoding": "gzip"]), [.body("x"), .end(nil)]),
        (HTTPResponseHead(version: .http1_0, status: .ok, headers: ["Transfer-Encoding": "chunked"]), [.body("close-delimited"), .end(nil)]),
        (HTTPResponseHead(version: .http1_0, status: .notFound, headers: ["Connection": "close"]), [.body("gone"), .end(nil)]),
        (HTTPResponseHead(version: .http1_1, status: .custom(code: 299, reasonPhrase: "Fine Thanks"), headers: ["Content-Length": "0"]), [.end(nil)]),
        (HTTPResponseHead(version: .http1_1, status: .custom(code: 599, reasonPhrase: ""), headers: [:]), [.end(nil)]),
        (HTTPResponseHead(version: .http1_1, status: .noContent, headers: ["Date": "x", "Set-Cookie": "a=b", "Set-Cookie": "c=d"]), [.end(nil)]),
        (HTTPResponseHead(version: .http1_1, status: .switchingProtocols, headers: ["Upgrade": "websocket", "Connection": "upgrade"]), []),
        (HTTPResponseHead(version: .http1_1, status: .networkAuthenticationRequired, headers: ["Content-Length": "1"]), [.body("!"), .end(nil)]),
        (HTTPResponseHead(version: .http1_1, status: .proxyAuthenticationRequired, headers: ["Proxy-Authenticate": "Basic realm=\"p\""]), [.end(nil)]),
    ]

    @Test(arguments: 0..<responses.count) func aResponseIsWrittenAsNIOsEncoderWroteIt(index: Int) throws {
        let (head, parts) = Self.responses[index]
        let expected = try encoded(.head(head), parts)
        #expect(written({ $0.head(head, allocator: allocator) }, parts) == expected)
    }

    /// A 1xx head leaves the framing of the final response to the final head.
    @Test func anInterimHeadDoesNotDecideTheFraming() throws {
        let interim = HTTPResponseHead(version: .http1_1, status: .continue)
        let final = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Transfer-Encoding": "chunked"])
        var writer = HTTPMessageWriter()
        _ = writer.head(final, allocator: allocator)
        _ = writer.head(interim, allocator: allocator)
        #expect(writer.isChunked, "a 100 Continue between must not end chunking")
        var bytes = ""
        writer.body(ByteBuffer(string: "ab"), allocator: allocator) { bytes += String(buffer: $0) }
        #expect(bytes == "2\r\nab\r\n")
        #expect(String(buffer: writer.end(nil, allocator: allocator)!) == "0\r\n\r\n")
        #expect(!writer.isChunked, "the end resets the framing")
        #expect(String(buffer: writer.head(interim, allocator: allocator)) == "HTTP/1.1 100 Continue\r\n\r\n")
    }

    private static let requests: [(HTTPRequestHead, [Part])] = [
        (HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: ["Host": "a.test"]), [.end(nil)]),
        (HTTPRequestHead(version: .http1_1, method: .POST, uri: "/p?q=1", headers: ["Host": "a.test", "Content-Length": "3"]), [.body("abc"), .end(nil)]),
        (HTTPRequestHead(version: .http1_1, method: .PUT, uri: "/u", headers: ["Transfer-Encoding": "chunked"]), [.body("abc"), .body(""), .end(trailers)]),
        (HTTPRequestHead(version: .http1_0, method: .HEAD, uri: "/h", headers: [:]), [.end(nil)]),
        (HTTPRequestHead(version: .http1_1, method: .RAW(value: "PURGEX"), uri: "*", headers: ["X": ""]), [.end(nil)]),
        (HTTPRequestHead(version: .http1_1, method: .OPTIONS, uri: "http://a.test:8080/x", headers: ["Via": "1.1 p"]), [.end(nil)]),
    ]

    @Test(arguments: 0..<requests.count) func aRequestIsWrittenAsNIOsEncoderWroteIt(index: Int) throws {
        let (head, parts) = Self.requests[index]
        let expected = try encoded(head, parts)
        #expect(written({ $0.head(head, allocator: allocator) }, parts) == expected)
    }
}
