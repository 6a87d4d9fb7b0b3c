#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore
import NIOEmbedded
import Testing

@testable import ProxyKit

/// The listener's pause after a failed accept, on the embedded loop's clock: when accepting stops,
/// when it resumes, and what does not start a pause. (The end-to-end pressure tests show the
/// symptom with real descriptors: no spinning CPU, clients served again.)
@Suite("Accept pause")
struct AcceptPauseHandlerTests {
    final class Harness {
        let channel = EmbeddedChannel()
        let counters = AcceptPauseHandler.Counters()
        /// Every change of the read interest, in order.
        var accepting: [Bool] = []
        var pausesLogged = 0
        var forwarded: [any Error] = []

        init() throws {
            let handler = AcceptPauseHandler(
                pause: .milliseconds(100), counters: counters, onPause: { [unowned self] _ in pausesLogged += 1 },
                setAccepting: { [unowned self] _, on in accepting.append(on) })
            try channel.pipeline.syncOperations.addHandler(handler)
            try channel.pipeline.syncOperations.addHandler(ErrorCollector { [unowned self] in forwarded.append($0) })
        }

        func fail(_ errno: Int32) {
            channel.pipeline.fireErrorCaught(IOError(errnoCode: errno, reason: "accept"))
        }

        func advance(_ amount: TimeAmount) {
            channel.embeddedEventLoop.advanceTime(by: amount)
        }
    }

    final class ErrorCollector: ChannelInboundHandler {
        typealias InboundIn = NIOAny
        let record: (any Error) -> Void
        init(_ record: @escaping (any Error) -> Void) { self.record = record }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { record(error) }
    }

    @Test(arguments: [EMFILE, ENFILE, ENOBUFS, ENOMEM])
    func aShortageStopsAcceptingForThePauseThenResumes(errno: Int32) throws {
        let h = try Harness()
        h.fail(errno)
        #expect(h.accepting == [false], "accepting stops at once")
        #expect(h.pausesLogged == 1)
        h.advance(.milliseconds(99))
        #expect(h.accepting == [false], "still paused 1 ms before the pause ends")
        h.advance(.milliseconds(1))
        #expect(h.accepting == [false, true], "accepting again when the pause ends")
        #expect(h.counters.acceptFailures == 1)
        #expect(h.forwarded.isEmpty, "a shortage is handled here, not reported as a listener error")
    }

    @Test func failuresDuringAPauseAreCountedButStartNoOtherPause() throws {
        let h = try Harness()
        h.fail(EMFILE)
        h.advance(.milliseconds(50))
        h.fail(EMFILE)
        h.fail(ENFILE)
        #expect(h.accepting == [false])
        #expect(h.pausesLogged == 1)
        h.advance(.milliseconds(50))
        #expect(h.accepting == [false, true], "the first pause's end, not a later one")
        h.advance(.seconds(1))
        #expect(h.accepting == [false, true])
        #expect(h.counters.acceptFailures == 3)

        // After the resumption the next shortage pauses again.
        h.fail(EMFILE)
        #expect(h.accepting == [false, true, false])
        h.advance(.milliseconds(100))
        #expect(h.accepting == [false, true, false, true])
        #expect(h.pausesLogged == 2)
    }

    @Test func otherErrorsGoOnAndPauseNothing() throws {
        let h = try Harness()
        h.fail(ECONNABORTED)
        h.channel.pipeline.fireErrorCaught(ChannelError.ioOnClosedChannel)
        #expect(h.accepting.isEmpty)
        #expect(h.counters.acceptFailures == 0)
        #expect(h.forwarded.count == 2)
    }

    @Test func aClosedListenerIsNotResumed() async throws {
        let h = try Harness()
        h.fail(EMFILE)
        try await h.channel.close().get()
        h.advance(.seconds(1))
        #expect(h.accepting == [false], "the resumption was cancelled with the listener")
    }
}
