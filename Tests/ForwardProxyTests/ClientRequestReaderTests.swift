import NIOCore
import NIOEmbedded
import Testing

@testable import ForwardProxy
@testable import ProxyKit

/// The client's request reader (`ClientRequestReader`, the codec on the read buffer), part by part:
/// what it hands on, what it keeps unparsed while holding (the read-ahead gate), what it hands on
/// as tunnel bytes, what it drops, what it refuses, and what it reports about a request's first bytes.
@Suite struct ClientRequestReaderTests {
    /// Records what the reader passes on (a head taken from the reader at once, as the
    /// connection handler does).
    final class Sink: ChannelInboundHandler {
        typealias InboundIn = ClientRequestEvent
        weak var reader: ClientRequestReader?
        var heads: [String] = []
        /// Each head's `bytesFollowed`.
        var followed: [Bool] = []
        var bodies: [String] = []
        var ends = 0
        var trailers: [[String]] = []
        var readCompletes = 0
        var errors: [any Error] = []
        /// Called with each head (e.g. to hold the gate).
        var onHead: ((String) -> Void)?
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head:
                guard let head = reader?.takeHead() else {
                    heads.append("(no head waiting)")
                    return
                }
                heads.append(head.uri)
                followed.append(head.bytesFollowed)
                onHead?(head.uri)
            case .body(let buffer): bodies.append(String(buffer: buffer))
            case .end(let fields):
                ends += 1
                if let fields { trailers.append(fields.storage.map { "\($0.name): \($0.value)" }) }
            }
        }
        func channelReadComplete(context: ChannelHandlerContext) { readCompletes += 1 }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { errors.append(error) }
    }

    /// Hands on the reader's events as the parts the connection handler makes of them (a head
    /// taken from the reader at once), for the tests that read the channel's inbound queue; raw
    /// bytes (after the reader is removed) once `raw` is set.
    final class Parts: ChannelInboundHandler {
        typealias InboundIn = ClientRequestEvent
        let reader: ClientRequestReader
        var raw = false

        init(_ reader: ClientRequestReader) { self.reader = reader }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !raw else {
                context.fireChannelRead(data)
                return
            }
            switch unwrapInboundIn(data) {
            case .head:
                if let head = reader.takeHead() { context.fireChannelRead(NIOAny(RequestPart.head(head))) }
            case .body(let buffer): context.fireChannelRead(NIOAny(RequestPart.body(buffer)))
            case .end(let trailers): context.fireChannelRead(NIOAny(RequestPart.end(trailers)))
            }
        }
    }

    /// A channel with a reader and `Parts` behind it (no sink: parts collect in the inbound queue).
    private func partsChannel() throws -> (EmbeddedChannel, ClientRequestReader, ByteToMessageHandler<ClientRequestReader>, Parts) {
        let channel = EmbeddedChannel()
        let reader = ClientRequestReader()
        let handler = ByteToMessageHandler(reader)
        let parts = Parts(reader)
        try channel.pipeline.syncOperations.addHandlers([handler, parts])
        return (channel, reader, handler, parts)
    }

    private func setUp() throws -> (EmbeddedChannel, ClientRequestReader, ByteToMessageHandler<ClientRequestReader>, Sink) {
        let channel = EmbeddedChannel()
        let reader = ClientRequestReader()
        let handler = ByteToMessageHandler(reader)
        let sink = Sink()
        try channel.pipeline.syncOperations.addHandlers([handler, sink])
        sink.reader = reader
        return (channel, reader, handler, sink)
    }

    private static func requests(_ range: Range<Int>) -> String {
        range.map { "GET http://a.test/\($0) HTTP/1.1\r\nHost: a.test\r\n\r\n" }.joined()
    }

    private func refusal(_ sink: Sink) -> ProxyError? {
        (sink.errors.first as? ClientRequestReader.Refusal)?.error
    }

    // MARK: - the read-ahead gate

    @Test func holdsBytesUnparsedUntilReleasedThenParsesThemInOrder() throws {
        let (channel, reader, _, sink) = try setUp()
        try channel.writeInbound(ByteBuffer(string: Self.requests(0..<1)))
        #expect(sink.heads == ["http://a.test/0"])
        reader.hold()
        try channel.writeInbound(ByteBuffer(string: Self.requests(1..<3)))
        #expect(sink.heads == ["http://a.test/0"], "nothing is parsed while holding")

        reader.release()
        #expect(sink.heads.count == 1, "released on the next loop turn, not re-entrantly")
        channel.embeddedEventLoop.run()
        #expect(sink.heads == ["http://a.test/0", "http://a.test/1", "http://a.test/2"])
        #expect(sink.ends == 3)
        #expect(sink.readCompletes >= 3, "the release ends with a read-complete (the handler flushes on it)")
    }

    @Test func aHoldDuringTheReleaseStopsAtThePartThatAskedForIt() throws {
        let (channel, reader, _, sink) = try setUp()
        reader.hold()
        let all = Self.requests(0..<4000)
        try channel.writeInbound(ByteBuffer(string: all))
        #expect(sink.heads.isEmpty)
        // The connection's handler holds again as soon as a request is parsed.
        sink.onHead = { _ in reader.hold() }
        reader.release()
        channel.embeddedEventLoop.run()
        #expect(sink.heads == ["http://a.test/0"], "the gate is checked before every part")
        #expect(sink.ends == 1, "its end needs no further byte: it comes with the head, the next request's does not")
        sink.onHead = nil
        reader.release()
        channel.embeddedEventLoop.run()
        #expect(sink.heads.count == 4000)
        #expect(sink.heads == (0..<4000).map { "http://a.test/\($0)" }, "in order, none lost or repeated")
        #expect(sink.ends == 4000)
    }

    @Test func aReleaseWithNothingHeldCostsNothing() throws {
        let (channel, reader, _, sink) = try setUp()
        try channel.writeInbound(ByteBuffer(string: Self.requests(0..<1)))
        let completes = sink.readCompletes
        reader.hold()
        reader.release()
        channel.embeddedEventLoop.run()
        #expect(sink.readCompletes == completes, "no empty read goes through the pipeline")
        #expect(sink.heads.count == 1)
    }

    @Test func anEndOfInputWhileHoldingParsesNothingMore() throws {
        let (channel, reader, _, sink) = try setUp()
        reader.hold()
        try channel.writeInbound(ByteBuffer(string: Self.requests(0..<500)))
        channel.pipeline.fireChannelInactive()
        channel.embeddedEventLoop.run()
        #expect(sink.heads.isEmpty, "the client is gone: its pipelined requests are not queued to be dropped")
        #expect(sink.errors.isEmpty)
    }

    // MARK: - what follows the HTTP

    @Test func bytesAfterAConnectHeadAreHandedOnAsTunnelBytesWhenRemoved() async throws {
        // No sink: what the reader passes on collects in the channel's inbound buffer.
        let (channel, reader, handler, parts) = try partsChannel()
        reader.hold()
        try channel.writeInbound(ByteBuffer(string: "CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n\u{16}\u{03}\u{01}hello"))
        reader.release()
        channel.embeddedEventLoop.run()
        guard case .head(let head) = try channel.readInbound(as: RequestPart.self) else {
            Issue.record("expected the CONNECT head")
            return
        }
        #expect(head.uri == "a.test:443")
        #expect(head.isConnect)
        guard case .end(nil) = try channel.readInbound(as: RequestPart.self) else {
            Issue.record("expected the CONNECT's end")
            return
        }
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil, "kept while the switch is decided")
        // More tunnel bytes before the switch: kept behind the first, not parsed.
        try channel.writeInbound(ByteBuffer(string: "GET / HTTP/1.1\r\n\r\n"))
        #expect(try channel.readInbound(as: RequestPart.self) == nil)
        parts.raw = true
        let removed = channel.pipeline.syncOperations.removeHandler(handler)
        channel.embeddedEventLoop.run()
        try await removed.get()
        #expect(
            try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "\u{16}\u{03}\u{01}helloGET / HTTP/1.1\r\n\r\n"),
            "handed on byte for byte, once"
        )
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
    }

    @Test func aConnectHeadSaysWhetherBytesFollowedItInTheSameRead() throws {
        let (channel, _, _, sink) = try setUp()
        var followed: [Bool] = []
        let connect = "CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n"
        for trailing in ["", "\u{16}\u{03}"] {
            let (channel, _, _, _) = try partsChannel()
            try channel.writeInbound(ByteBuffer(string: connect + trailing))
            guard case .head(let head) = try channel.readInbound(as: RequestPart.self) else {
                Issue.record("expected the head")
                return
            }
            followed.append(head.bytesFollowed)
        }
        #expect(followed == [false, true])
        // Not for other requests, whatever follows them.
        try channel.writeInbound(ByteBuffer(string: Self.requests(0..<2)))
        #expect(sink.followed == [false, false])
    }

    @Test func afterARefusedConnectWhatFollowsIsHTTPAgain() throws {
        let (channel, reader, _, sink) = try setUp()
        // The refusal comes while the head is handed on, before the CONNECT's end is read.
        sink.onHead = { _ in reader.resumeAfterRefusal() }
        try channel.writeInbound(ByteBuffer(string: "CONNECT a.test:443 HTTP/1.1\r\n\r\n"))
        sink.onHead = nil
        #expect(sink.ends == 1)
        try channel.writeInbound(ByteBuffer(string: "CONNECT a.test:443 HTTP/1.1\r\nProxy-Authorization: Basic YTpi\r\n\r\ntunnel"))
        #expect(sink.heads == ["a.test:443", "a.test:443"], "the retry is parsed")
        #expect(sink.ends == 2)
        channel.embeddedEventLoop.run()
        #expect(sink.heads.count == 2, "after the accepted retry, bytes are tunnel bytes again")
        #expect(sink.errors.isEmpty)

        // A refusal decided later (a credential check): the bytes read meanwhile are parsed once
        // the reader resumes, on the next loop turn.
        let (later, laterReader, _, laterSink) = try setUp()
        try later.writeInbound(ByteBuffer(string: "CONNECT a.test:443 HTTP/1.1\r\n\r\n"))
        try later.writeInbound(ByteBuffer(string: "GET http://a.test/ HTTP/1.1\r\n\r\n"))
        #expect(laterSink.heads == ["a.test:443"])
        laterReader.resumeAfterRefusal()
        #expect(laterSink.heads.count == 1, "not re-entrantly")
        later.embeddedEventLoop.run()
        #expect(laterSink.heads == ["a.test:443", "http://a.test/"])

        // Without a refusal nothing after a CONNECT is parsed; a refusal of another request
        // resumes nothing.
        let (plain, plainReader, _, plainSink) = try setUp()
        try plain.writeInbound(ByteBuffer(string: Self.requests(0..<1)))
        plainReader.resumeAfterRefusal()
        try plain.writeInbound(ByteBuffer(string: "CONNECT a.test:443 HTTP/1.1\r\n\r\n" + Self.requests(1..<2)))
        plain.embeddedEventLoop.run()
        #expect(plainSink.heads == ["http://a.test/0", "a.test:443"])
    }

    @Test func bytesAfterAnUpgradeRequestAreHandedOnAsTunnelBytesWhenRemoved() async throws {
        let (channel, _, handler, parts) = try partsChannel()
        let request = "GET http://a.test/ws HTTP/1.1\r\nHost: a.test\r\nConnection: upgrade\r\nUpgrade: websocket\r\nContent-Length: 2\r\n\r\nhi"
        try channel.writeInbound(ByteBuffer(string: request + "\u{81}\u{02}ws"))
        guard case .head(let head) = try channel.readInbound(as: RequestPart.self) else {
            Issue.record("expected the upgrade head")
            return
        }
        #expect(head.fields.first(name: "upgrade") == "websocket")
        guard case .body(let body) = try channel.readInbound(as: RequestPart.self), case .end(nil) = try channel.readInbound(as: RequestPart.self)
        else {
            Issue.record("expected the body and the end")
            return
        }
        #expect(String(buffer: body) == "hi")
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        parts.raw = true
        let removed = channel.pipeline.syncOperations.removeHandler(handler)
        channel.embeddedEventLoop.run()
        try await removed.get()
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "\u{81}\u{02}ws"))
    }

    @Test func bytesAfterARequestThatClosesAreNeitherParsedNorHandedOn() async throws {
        let (channel, _, handler, sink) = try setUp()
        try channel.writeInbound(ByteBuffer(string: "GET http://a.test/ HTTP/1.1\r\nConnection: close\r\n\r\nGET http://a.test/2 HTTP/1.1\r\n\r\n"))
        try channel.writeInbound(ByteBuffer(string: "garbage\r\n\r\n"))
        #expect(sink.heads == ["http://a.test/"])
        #expect(sink.ends == 1)
        #expect(sink.errors.isEmpty, "not refused either: nobody will read an answer to them")
        let removed = channel.pipeline.syncOperations.removeHandler(handler)
        channel.embeddedEventLoop.run()
        try await removed.get()
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
    }

    @Test func anHTTP10RequestWithCloseAndKeepAliveClosesTheConnection() throws {
        let (channel, _, _, _) = try partsChannel()
        try channel.writeInbound(ByteBuffer(string: "GET http://a.test/ HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\nGET http://a.test/2 HTTP/1.0\r\n\r\n"))
        guard case .head(let head) = try channel.readInbound(as: RequestPart.self) else {
            Issue.record("expected the head")
            return
        }
        #expect(!head.isKeepAlive, "close wins (RFC 9112 §9.3): the machine does not wait for another request")
        guard case .end = try channel.readInbound(as: RequestPart.self) else {
            Issue.record("expected the end")
            return
        }
        #expect(try channel.readInbound(as: RequestPart.self) == nil, "nothing after it is parsed")
    }

    // MARK: - bodies and trailers

    @Test func bodiesArriveAsTheyAreReadAndTrailersWithTheEnd() throws {
        let (channel, _, _, sink) = try setUp()
        try channel.writeInbound(ByteBuffer(string: "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"))
        try channel.writeInbound(ByteBuffer(string: "lo\r\n3;x=y\r\n, w\r\n0\r\nX-Sum: 1\r\n\r\n"))
        try channel.writeInbound(ByteBuffer(string: "POST http://a.test/2 HTTP/1.1\r\nContent-Length: 4\r\n\r\nab"))
        try channel.writeInbound(ByteBuffer(string: "cd"))
        #expect(sink.heads == ["http://a.test/", "http://a.test/2"])
        #expect(sink.bodies == ["hel", "lo", ", w", "ab", "cd"])
        #expect(sink.trailers == [["X-Sum: 1"]])
        #expect(sink.ends == 2)
    }

    /// What the codec takes where llhttp refused (DifferentialTests' rules 1 and 12): an extension
    /// method, and spaces after a Content-Length value (the value handed on has none).
    @Test func anExtensionMethodAndAContentLengthWithTrailingSpacesAreRead() throws {
        let (channel, _, _, _) = try partsChannel()
        try channel.writeInbound(ByteBuffer(string: "FOO http://a.test/ HTTP/1.1\r\nContent-Length: 5  \r\n\r\nhello"))
        guard case .head(let head) = try channel.readInbound(as: RequestPart.self) else {
            Issue.record("expected the head")
            return
        }
        #expect(head.methodName == "FOO")
        #expect(head.fields.first(name: "content-length") == "5")
        guard case .body(let body) = try channel.readInbound(as: RequestPart.self), case .end(nil) = try channel.readInbound(as: RequestPart.self)
        else {
            Issue.record("expected the body and the end")
            return
        }
        #expect(String(buffer: body) == "hello")
    }

    // MARK: - refusals

    /// (bytes, status, text of the answer)
    static let refused: [(String, Int, String)] = [
        ("GET http://a.test/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", 400,
         "malformed request: Content-Length is not allowed here (duplicate, or together with Transfer-Encoding)"),
        ("GET http://a.test/ HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n", 400, "malformed request: invalid header field (name, value or line folding)"),
        ("GET http://a.test/ HTTP/2.0\r\n\r\n", 400, "malformed request: invalid HTTP version"),
        ("GET http://a.test/\(String(repeating: "a", count: 9000)) HTTP/1.1\r\n\r\n", 414,
         "the request line is 8197 bytes or more; the limit for the target is 8192"),
        ("GET http://a.test/ HTTP/1.1\r\n" + String(repeating: "X-A: 1\r\n", count: 257) + "\r\n", 431,
         "request headers are too large (at most 256 fields and 81920 bytes)"),
    ]

    @Test(arguments: refused)
    func refusesWithTheAnswerAndParsesNothingAfter(_ bytes: String, _ status: Int, _ text: String) throws {
        let (channel, _, _, sink) = try setUp()
        try? channel.writeInbound(ByteBuffer(string: bytes + Self.requests(0..<1)))
        guard let error = refusal(sink) else {
            Issue.record("expected a refusal, got \(sink.errors)")
            return
        }
        #expect(error.statusCode == status)
        #expect(error.message == text)
        #expect(sink.heads.isEmpty)
        try? channel.writeInbound(ByteBuffer(string: Self.requests(1..<2)))
        #expect(sink.heads.isEmpty, "nothing after a refusal is parsed")
        #expect(sink.errors.dropFirst().allSatisfy { !($0 is ClientRequestReader.Refusal) }, "refused once")
    }

    @Test func anEndOfInputInTheMiddleOfARequestIsRefusedAndBetweenRequestsIsNot() throws {
        let (channel, _, _, sink) = try setUp()
        try channel.writeInbound(ByteBuffer(string: Self.requests(0..<1) + "POST http://a.test/ HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc"))
        channel.pipeline.fireChannelInactive()
        #expect(refusal(sink)?.message == "malformed request: the request could not be parsed (stream ended at an unexpected time)")

        let (clean, _, _, cleanSink) = try setUp()
        try clean.writeInbound(ByteBuffer(string: Self.requests(0..<2)))
        clean.pipeline.fireChannelInactive()
        #expect(cleanSink.errors.isEmpty)
        #expect(cleanSink.ends == 2)
    }

    // MARK: - the first bytes

    @Test func reportsTheFirstBytesOfARequestOncePerArming() throws {
        let (channel, reader, _, _) = try setUp()
        var started = 0
        reader.arm { started += 1 }
        try channel.writeInbound(ByteBuffer(string: "GET http://a.test/"))
        #expect(started == 1)
        try channel.writeInbound(ByteBuffer(string: "long HTTP/1.1\r\nHost: a.test\r\n"))
        #expect(started == 1, "fires once per arming")
        try channel.writeInbound(ByteBuffer(string: "\r\n"))
        #expect(started == 1)
        reader.arm { started += 1 }
        try channel.writeInbound(ByteBuffer(string: "GET http://a.test/2 HTTP/1.1\r\n"))
        #expect(started == 2)
        reader.disarm()
        try channel.writeInbound(ByteBuffer(string: "\r\nGET http://a.test/3 HTTP/1.1\r\n"))
        #expect(started == 2, "not after disarming")
    }
}
