import NIOCore
import ProxyConfig
import Testing

@testable import TransparentProxy

/// The peek's timing, with the time given: the short timeout for a silent client, the long one
/// for a hello that has begun, and what a hello still incomplete then gets.
@Suite struct TransparentPeekClockTests {
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func clock(_ fallback: TransparentFallback = .original, hello: TimeAmount = .seconds(5)) -> TransparentPeekClock {
        TransparentPeekClock(started: start, silentTimeout: .milliseconds(300), helloTimeout: hello, fallback: fallback)
    }

    func at(_ ms: Int64) -> NIODeadline { start + .milliseconds(ms) }

    /// The first third of a ClientHello for origin.test, and all of it.
    let hello = HelloBytes.hello("origin.test")
    var third: [UInt8] { Array(hello.prefix(hello.count / 3)) }

    @Test func aSilentClientGetsTheServerFirstPathAtThePeekTimeout() {
        var clock = clock()
        #expect(clock.deadline == at(300))
        #expect(clock.step(.needMore, received: 0, now: at(0)) == (.wait, nil))
        #expect(clock.step(.needMore, received: 0, now: at(299)) == (.wait, nil))
        #expect(clock.step(.needMore, received: 0, now: at(300)) == (.relayOriginal, .silent))
    }

    @Test func aHelloInSegments300MsApartIsWaitedForAndDecidedByItsName() {
        var clock = clock()
        let peek = TransparentPeek.classify(third)
        #expect(peek == .needMore)
        #expect(clock.step(peek, received: third.count, now: at(1)) == (.wait, nil))
        // The first byte moved the deadline from the peek timeout to the hello timeout.
        #expect(clock.deadline == at(5000))
        #expect(clock.step(peek, received: third.count * 2, now: at(301)) == (.wait, nil))
        #expect(clock.step(peek, received: third.count * 2, now: at(601)) == (.wait, nil))
        #expect(clock.step(TransparentPeek.classify(hello), received: hello.count, now: at(602)) == (.resolve(name: "origin.test", http: false), .tls))
    }

    @Test func aHeadThatHasBegunWaitsToo() {
        var clock = clock()
        let head = Array("GET / HTTP/1.1\r\nHo".utf8)
        #expect(clock.step(TransparentPeek.classify(head), received: head.count, now: at(350)) == (.wait, nil))
        #expect(clock.deadline == at(5000))
    }

    @Test func aHelloStillIncompleteFollowsTheFallback() {
        var relay = clock(.original)
        #expect(relay.step(.needMore, received: 20, now: at(4999)) == (.wait, nil))
        #expect(relay.step(.needMore, received: 20, now: at(5000)) == (.relayOriginal, .incomplete))
        var refuse = clock(.refuse)
        #expect(refuse.step(.needMore, received: 20, now: at(5000)) == (.refuse, .incomplete))
    }

    @Test func theHelloTimeoutIsNeverShorterThanThePeekTimeout() {
        var clock = clock(hello: .milliseconds(100))
        #expect(clock.step(.needMore, received: 5, now: at(200)) == (.wait, nil))
        #expect(clock.deadline == at(300))
        #expect(clock.step(.needMore, received: 5, now: at(300)) == (.relayOriginal, .incomplete))
    }

    @Test func bytesDecideWhateverTheTime() {
        var clock = clock()
        #expect(clock.step(TransparentPeek.classify(hello), received: hello.count, now: at(0)) == (.resolve(name: "origin.test", http: false), .tls))
        #expect(clock.step(.unknown, received: 9, now: at(9000)) == (.relayOriginal, .unknown))
    }
}
