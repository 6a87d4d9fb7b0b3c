@testable import DNSListener
import NIOCore
import NIOEmbedded
import Testing

/// The UDP listener's flushes, byte level through an EmbeddedChannel (which hands out only what
/// was flushed): answers known at once leave in batches of `flushEvery` while a read burst goes
/// on, and the rest at its end, so none waits for a whole burst to be read.
@Suite struct DNSUDPFlushTests {
    static let client = try! SocketAddress(ipAddress: "127.0.0.1", port: 5353)

    static func channel(flushEvery: Int) throws -> EmbeddedChannel {
        let responder = LocalRecordsResponderTests.responder("127.0.0.2 origin.test\n")
        return EmbeddedChannel(handler: DNSUDPHandler(responder: responder, flushEvery: flushEvery))
    }

    static func flushed(_ channel: EmbeddedChannel) throws -> Int {
        var count = 0
        while let envelope = try channel.readOutbound(as: AddressedEnvelope<ByteBuffer>.self) {
            #expect(envelope.remoteAddress == client)
            #expect(envelope.data.readableBytesView.prefix(2).elementsEqual([0x12, 0x34]), "the answer to the query")
            count += 1
        }
        return count
    }

    @Test func answersLeaveInBatchesDuringABurstAndTheRestAtItsEnd() throws {
        let channel = try Self.channel(flushEvery: 32)
        let query = ByteBuffer(bytes: LocalRecordsResponderTests.query("origin.test", type: 1))
        for n in 1...70 {
            // Reads without their channelReadComplete (writeInbound would fire one each time).
            channel.pipeline.fireChannelRead(NIOAny(AddressedEnvelope(remoteAddress: Self.client, data: query)))
            // Flushed so far: whole batches only (no channelReadComplete yet).
            let expected = n % 32 == 0 ? 32 : 0
            #expect(try Self.flushed(channel) == expected, "after \(n) queries")
        }
        channel.pipeline.fireChannelReadComplete()
        #expect(try Self.flushed(channel) == 6, "the rest at the end of the burst")
        channel.pipeline.fireChannelReadComplete()
        #expect(try Self.flushed(channel) == 0)
        _ = try channel.finish()
    }

    /// The handler reads every datagram into one reused array: answers in one burst, each to a
    /// different name, must each carry their own ID and question.
    @Test func eachAnswerEchoesItsOwnQueryAcrossTheReusedDatagram() throws {
        let responder = LocalRecordsResponderTests.responder("127.0.0.2 origin.test\n127.0.0.3 a.test\n127.0.0.4 a-much-longer-name.test\n")
        let channel = EmbeddedChannel(handler: DNSUDPHandler(responder: responder, flushEvery: 32))
        let names = ["a-much-longer-name.test", "a.test", "origin.test", "a.test"]
        var sent: [[UInt8]] = []
        for (index, name) in names.enumerated() {
            var query = LocalRecordsResponderTests.query(name, type: 1)
            query[0] = 0xA0
            query[1] = UInt8(index)
            sent.append(query)
            channel.pipeline.fireChannelRead(NIOAny(AddressedEnvelope(remoteAddress: Self.client, data: ByteBuffer(bytes: query))))
        }
        channel.pipeline.fireChannelReadComplete()
        for query in sent {
            let envelope = try #require(try channel.readOutbound(as: AddressedEnvelope<ByteBuffer>.self))
            let answer = Array(envelope.data.readableBytesView)
            #expect(Array(answer[0..<2]) == Array(query[0..<2]), "the query's ID")
            #expect(Array(answer[12..<query.count]) == Array(query[12...]), "the query's question")
            #expect(answer[7] == 1, "one address")
        }
        #expect(try channel.readOutbound(as: AddressedEnvelope<ByteBuffer>.self) == nil)
        _ = try channel.finish()
    }
}
