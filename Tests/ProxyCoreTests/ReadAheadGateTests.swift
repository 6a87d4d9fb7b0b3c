import NIOCore
import NIOEmbedded
import Testing

@testable import ProxyCore

/// The read-ahead gate in `ClientActivityObserver`, byte by byte: what it passes on, what it holds,
/// and which socket reads it lets through.
@Suite struct ReadAheadGateTests {
    /// Records the buffers that pass the gate, and counts reads that reach the head.
    final class Sink: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var received: [String] = []
        var readCompletes = 0
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received.append(String(buffer: unwrapInboundIn(data)))
        }
        func channelReadComplete(context: ChannelHandlerContext) { readCompletes += 1 }
    }

    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = NIOAny
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    private func setUp() throws -> (EmbeddedChannel, ClientActivityObserver, Sink, ReadCounter) {
        let channel = EmbeddedChannel()
        let counter = ReadCounter()
        let observer = ClientActivityObserver()
        let sink = Sink()
        try channel.pipeline.syncOperations.addHandlers([counter, observer, sink])
        return (channel, observer, sink, counter)
    }

    @Test func holdsBuffersAndReadsUntilReleasedThenPassesThemInOrder() throws {
        let (channel, observer, sink, counter) = try setUp()
        try channel.writeInbound(ByteBuffer(string: "one"))
        #expect(sink.received == ["one"])
        observer.hold()
        try channel.writeInbound(ByteBuffer(string: "two"))
        try channel.writeInbound(ByteBuffer(string: "three"))
        #expect(sink.received == ["one"], "nothing reaches the decoder while holding")
        #expect(observer.heldBytes == 8)
        channel.read()
        #expect(counter.reads == 0, "no socket read while bytes are held")

        observer.release()
        #expect(sink.received == ["one"], "released on the next loop turn, not re-entrantly")
        channel.embeddedEventLoop.run()
        #expect(sink.received == ["one", "two", "three"])
        #expect(observer.heldBytes == 0)
        #expect(counter.reads == 1, "the swallowed read is asked for again")
    }

    @Test func aHoldDuringTheReleaseStopsAtTheNextBuffer() throws {
        let (channel, observer, sink, counter) = try setUp()
        observer.hold()
        for word in ["a", "b", "c"] { try channel.writeInbound(ByteBuffer(string: word)) }
        channel.read()
        // The decoder's handler holds again as soon as "a" is parsed.
        let holdAgain = HoldOnFirst(observer: observer)
        try channel.pipeline.syncOperations.addHandler(holdAgain, position: .before(sink))
        observer.release()
        channel.embeddedEventLoop.run()
        #expect(sink.received == ["a"])
        #expect(observer.heldBytes == 2 && counter.reads == 0)
        observer.release()
        channel.embeddedEventLoop.run()
        #expect(sink.received == ["a", "b", "c"] && counter.reads == 1)
    }

    @Test func releaseNowPassesEverythingAtOnce() throws {
        let (channel, observer, sink, _) = try setUp()
        observer.hold()
        try channel.writeInbound(ByteBuffer(string: "CONNECT-tail"))
        observer.releaseNow()
        #expect(sink.received == ["CONNECT-tail"])
        #expect(sink.readCompletes >= 1)
    }

    final class HoldOnFirst: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        let observer: ClientActivityObserver
        var done = false
        init(observer: ClientActivityObserver) { self.observer = observer }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if !done {
                done = true
                observer.hold()
            }
            context.fireChannelRead(data)
        }
    }
}
