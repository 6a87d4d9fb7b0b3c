import HTTP1Codec
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import ProxyUpstream

@Suite("Upstream connection state machine")
struct UpstreamConnectionStateMachineTests {
    typealias Machine = UpstreamConnectionStateMachine
    let pool = UpstreamPool(eventLoop: EmbeddedEventLoop(), maxIdlePerOrigin: 4, idleTimeout: .seconds(30))
    let head = UpstreamResponsePart.head(Self.okHead())

    static func okHead() -> HTTP1Head {
        var decoder = MessageDecoder(role: .response)
        decoder.expectResponse(ResponseContext(method: .get))
        var buffer = ByteBuffer(string: "HTTP/1.1 200 OK\r\n\r\n")
        guard case .head(let head) = try? decoder.next(&buffer) else { fatalError("the codec refused a plain 200") }
        return head
    }

    @Test func bytesNobodyAskedForCloseTheConnection() {
        var m = Machine()
        let r1 = m.responsePart(head)
        #expect(r1 == .close, "a fresh connection")
        m.attached()
        let r2 = m.responsePart(head)
        #expect(r2 == .deliver)
        _ = m.readComplete()
        let r3 = m.released(to: pool)
        #expect(r3, "outside a read: to the pool at once")
        let r4 = m.responsePart(.body(ByteBuffer(string: "late")))
        #expect(r4 == .close, "an idle pooled connection")
    }

    @Test func takingAConnectionThatAlreadyClosedSaysSo() {
        var m = Machine()
        let owned = m.channelClosed()
        #expect(!owned, "nobody owned it")
        let attached = m.attached()
        #expect(!attached, "the taker must treat it as closed")
        #expect(m.isClosed)
        var open = Machine()
        let openAttached = open.attached()
        #expect(openAttached)
    }

    @Test func aReleaseInsideAReadWaitsForTheReadToEnd() {
        var m = Machine()
        m.attached()
        let r5 = m.responsePart(.end(nil))
        #expect(r5 == .deliver)
        let r6 = m.released(to: pool)
        #expect(!r6, "the decoder may still hold bytes that followed the response")
        guard case .release(let to) = m.readComplete() else {
            Issue.record("expected the deferred release")
            return
        }
        #expect(to === pool)
        guard case .none = m.readComplete() else {
            Issue.record("released once")
            return
        }
    }

    @Test func aCloseCancelsADeferredRelease() {
        var m = Machine()
        m.attached()
        _ = m.responsePart(.end(nil))
        _ = m.released(to: pool)
        m.closing()
        guard case .none = m.readComplete() else {
            Issue.record("a connection being closed must not go to the pool")
            return
        }
        let r7 = m.channelClosed()
        #expect(!r7, "nobody owned it")
        #expect(m.isClosed)
    }

    @Test func theOwnerHearsOfACloseOnlyWhileServing() {
        var serving = Machine()
        serving.attached()
        serving.errorCaught(ChannelError.ioOnClosedChannel)
        serving.errorCaught(ChannelError.alreadyClosed)
        let r8 = serving.channelClosed()
        #expect(r8)
        #expect(serving.closeError as? ChannelError == .ioOnClosedChannel, "the first error is the one reported")

        var detached = Machine()
        detached.attached()
        detached.detached()
        let r9 = detached.channelClosed()
        #expect(!r9)
    }

    @Test func readsWaitForTheClientToDrain() {
        var m = Machine()
        m.attached()
        let r10 = m.readRequested()
        #expect(r10)
        let r11 = m.setReadsAllowed(false)
        #expect(!r11)
        let r12 = m.readRequested()
        #expect(!r12, "held while the client is not writable")
        let r13 = m.readRequested()
        #expect(!r13)
        let r14 = m.setReadsAllowed(true)
        #expect(r14, "the held read goes out once")
        let r15 = m.setReadsAllowed(true)
        #expect(!r15)
    }

    @Test func anUpgradeKeepsRawBytesAfterThe101sEnd() {
        var m = Machine()
        m.attached()
        _ = m.setReadsAllowed(false)
        m.startCollecting(expectingEnd: true)
        let r16 = m.readRequested()
        #expect(r16, "a tunnel being set up is read regardless of the old exchange's client")
        #expect(m.awaitsUpgradeEnd)
        let r17 = m.rawBytes(NIOAny(ByteBuffer(string: "too early")))
        #expect(!r17, "before the 101's end, parts are HTTP")
        let r18 = m.responsePart(.end(nil))
        #expect(r18 == .keep)
        #expect(!m.awaitsUpgradeEnd)
        let r19 = m.rawBytes(NIOAny(ByteBuffer(string: "frame1")))
        #expect(r19)
        let r20 = m.rawBytes(NIOAny(ByteBuffer(string: "frame2")))
        #expect(r20)
        let r21 = m.takeCollected()
        #expect(r21.count == 2)
        let r22 = m.channelClosed()
        #expect(!r22, "a tunnel's upstream is nobody's exchange")
    }

    @Test func collectedBytesAreHandedOverOnce() {
        var m = Machine()
        m.attached()
        m.startCollecting(expectingEnd: false)
        let r23 = m.rawBytes(NIOAny(ByteBuffer(string: "a")))
        #expect(r23)
        let r24 = m.takeCollected()
        #expect(r24.count == 1)
        let r25 = m.takeCollected()
        #expect(r25.isEmpty)
        #expect(!m.isCollecting)
    }
}
