import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import ProxyHTTP

/// The read-ahead gate in `ClientRequestDecoder`, request by request: what it parses, what it
/// keeps unparsed while holding, what it hands on as tunnel bytes, and what it reports about a
/// request's first bytes.
@Suite struct ReadAheadGateTests {
    /// Records what the decoder passes on: request targets and `end`s.
    final class Sink: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        var heads: [String] = []
        var ends = 0
        var readCompletes = 0
        /// Called with each head (e.g. to hold the gate).
        var onHead: ((String) -> Void)?
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                heads.append(head.uri)
                onHead?(head.uri)
            case .end: ends += 1
            case .body: break
            }
        }
        func channelReadComplete(context: ChannelHandlerContext) { readCompletes += 1 }
    }

    private func setUp() throws -> (EmbeddedChannel, ClientRequestDecoder, ByteToMessageHandler<ClientRequestDecoder>, Sink) {
        let channel = EmbeddedChannel()
        let decoder = ClientRequestDecoder()
        let handler = ByteToMessageHandler(decoder)
        let sink = Sink()
        try channel.pipeline.syncOperations.addHandlers([handler, sink])
        return (channel, decoder, handler, sink)
    }

    private static func requests(_ range: Range<Int>) -> String {
        range.map { "GET http://a.test/\($0) HTTP/1.1\r\nHost: a.test\r\n\r\n" }.joined()
    }

    @Test func holdsBytesUnparsedUntilReleasedThenParsesThemInOrder() throws {
        let (channel, decoder, _, sink) = try setUp()
        try channel.writeInbound(ByteBuffer(string: Self.requests(0..<1)))
        #expect(sink.heads == ["http://a.test/0"])
        decoder.hold()
        try channel.writeInbound(ByteBuffer(string: Self.requests(1..<3)))
        #expect(sink.heads == ["http://a.test/0"], "nothing is parsed while holding")

        decoder.release()
        #expect(sink.heads.count == 1, "released on the next loop turn, not re-entrantly")
        channel.embeddedEventLoop.run()
        #expect(sink.heads == ["http://a.test/0", "http://a.test/1", "http://a.test/2"])
        #expect(sink.ends == 3)
        #expect(sink.readCompletes >= 3, "the release ends with a read-complete (the handler flushes on it)")
    }

    @Test func aHoldDuringTheReleaseStopsAtTheNextSlice() throws {
        let (channel, decoder, _, sink) = try setUp()
        decoder.hold()
        // More than two slices of pipelined requests arrive while holding.
        let all = Self.requests(0..<4000)
        #expect(all.utf8.count > 2 * ClientRequestDecoder.feedLimit)
        try channel.writeInbound(ByteBuffer(string: all))
        #expect(sink.heads.isEmpty)
        // The connection's handler holds again as soon as a request is parsed.
        sink.onHead = { _ in decoder.hold() }
        decoder.release()
        channel.embeddedEventLoop.run()
        let first = sink.heads.count
        #expect(first > 0 && first < 4000, "one slice parsed, the rest kept: \(first)")
        #expect(first <= ClientRequestDecoder.feedLimit / 40 + 1, "bounded by one slice")
        sink.onHead = nil
        decoder.release()
        channel.embeddedEventLoop.run()
        #expect(sink.heads.count == 4000)
        #expect(sink.heads.last == "http://a.test/3999")
        #expect(sink.heads == (0..<4000).map { "http://a.test/\($0)" }, "in order, none lost or repeated")
    }

    @Test func aReleaseWithNothingHeldCostsNothing() throws {
        let (channel, decoder, _, sink) = try setUp()
        try channel.writeInbound(ByteBuffer(string: Self.requests(0..<1)))
        let completes = sink.readCompletes
        decoder.hold()
        decoder.release()
        channel.embeddedEventLoop.run()
        #expect(sink.readCompletes == completes, "no empty read goes through the pipeline")
        #expect(sink.heads.count == 1)
    }

    @Test func anEndOfInputWhileHoldingParsesNothingMore() throws {
        let (channel, decoder, _, sink) = try setUp()
        decoder.hold()
        try channel.writeInbound(ByteBuffer(string: Self.requests(0..<500)))
        channel.pipeline.fireChannelInactive()
        channel.embeddedEventLoop.run()
        #expect(sink.heads.isEmpty, "the client is gone: its pipelined requests are not queued to be dropped")
    }

    @Test func bytesAfterAConnectHeadAreHandedOnAsTunnelBytesWhenRemoved() throws {
        // No sink: what the decoder passes on collects in the channel's inbound buffer.
        let channel = EmbeddedChannel()
        let decoder = ClientRequestDecoder()
        let handler = ByteToMessageHandler(decoder)
        try channel.pipeline.syncOperations.addHandler(handler)
        decoder.hold()
        try channel.writeInbound(ByteBuffer(string: "CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n\u{16}\u{03}\u{01}hello"))
        decoder.release()
        channel.embeddedEventLoop.run()
        guard case .head(let head) = try channel.readInbound(as: HTTPServerRequestPart.self) else {
            Issue.record("expected the CONNECT head")
            return
        }
        #expect(head.uri == "a.test:443")
        #expect(try channel.readInbound(as: HTTPServerRequestPart.self) == .end(nil))
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil, "kept while the switch is decided")
        let removed = channel.pipeline.syncOperations.removeHandler(handler)
        channel.embeddedEventLoop.run()
        try removed.wait()
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "\u{16}\u{03}\u{01}hello"), "handed on byte for byte")
    }

    @Test func reportsTheFirstBytesOfARequestAndItsRequestLineLength() throws {
        let (channel, decoder, _, _) = try setUp()
        var started = 0
        decoder.arm { started += 1 }
        try channel.writeInbound(ByteBuffer(string: "GET http://a.test/"))
        #expect(started == 1)
        #expect(decoder.requestLineLength == 18)
        try channel.writeInbound(ByteBuffer(string: "long HTTP/1.1\r\nHost: a.test\r\n"))
        #expect(started == 1, "fires once per arming")
        #expect(decoder.requestLineLength == 18 + 14, "counted once although llhttp keeps the unfinished head")
        try channel.writeInbound(ByteBuffer(string: "\r\n"))
        #expect(decoder.requestLineLength == 32)
        decoder.arm { started += 1 }
        try channel.writeInbound(ByteBuffer(string: "GET http://a.test/2 HTTP/1.1\r\n"))
        #expect(started == 2)
        #expect(decoder.requestLineLength == 29, "the bytes before the LF, CR included")
    }
}
