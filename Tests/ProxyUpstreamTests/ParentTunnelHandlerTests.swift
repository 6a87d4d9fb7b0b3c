import NIOCore
import NIOEmbedded
import OpenSSLTLS
import Testing

@testable import ProxyUpstream

/// The CONNECT to the parent proxy, byte for byte: what goes out, what is held, what a 2xx lets
/// through and what any other answer does.
@Suite struct ParentTunnelHandlerTests {
    struct Fixture {
        let channel = EmbeddedChannel()
        let result: EventLoopPromise<Void>
        var outcome: Result<Void, any Error>?

        init(credentials: String? = nil) throws {
            result = channel.eventLoop.makePromise()
            try channel.pipeline.syncOperations.addHandler(
                ParentTunnelHandler(target: "192.0.2.7:443", credentials: credentials, result: result))
        }

        func written() throws -> String {
            var text = ""
            while let buffer = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
            return text
        }
    }

    @Test func theConnectGoesOutFirstAndWritesWaitForThe2xx() async throws {
        let f = try Fixture(credentials: "user:p@ss:word")
        try await f.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).get()
        #expect(try f.written() == "CONNECT 192.0.2.7:443 HTTP/1.1\r\nHost: 192.0.2.7:443\r\nProxy-Authorization: Basic dXNlcjpwQHNzOndvcmQ=\r\n\r\n")
        // A ClientHello written now is held until the parent says yes.
        f.channel.writeAndFlush(ByteBuffer(string: "hello"), promise: nil)
        #expect(try f.written() == "")
        var succeeded = false
        f.result.futureResult.whenSuccess { succeeded = true }
        // The answer in two reads, the origin's first bytes right behind it.
        try f.channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 Connection established\r\n"))
        #expect(!succeeded)
        try f.channel.writeInbound(ByteBuffer(string: "\r\nSERVER-FIRST"))
        #expect(succeeded)
        #expect(try f.written() == "hello")
        #expect(try f.channel.readInbound(as: ByteBuffer.self).map { String(buffer: $0) } == "SERVER-FIRST")
        // Gone from the pipeline: bytes pass untouched both ways.
        #expect(throws: (any Error).self) { try f.channel.pipeline.syncOperations.handler(type: ParentTunnelHandler.self) }
        try f.channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\n\r\n"))
        #expect(try f.channel.readInbound(as: ByteBuffer.self).map { String(buffer: $0) } == "HTTP/1.1 200 OK\r\n\r\n")
    }

    @Test func anyOtherAnswerFailsTheTunnelAndClosesWithoutPassingABytePastIt() async throws {
        for (answer, status) in [("HTTP/1.1 403 Forbidden\r\nContent-Length: 3\r\n\r\nno!", 403), ("HTTP/1.0 503 Service Unavailable\r\n\r\n", 503),
                                 ("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n", 407)] {
            let f = try Fixture()
            try await f.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).get()
            _ = try f.written()
            var heldWrite: (any Error)?
            f.channel.writeAndFlush(ByteBuffer(string: "request")).whenFailure { heldWrite = $0 }
            var failure: (any Error)?
            f.result.futureResult.whenFailure { failure = $0 }
            try f.channel.writeInbound(ByteBuffer(string: answer))
            #expect((failure as? ParentTunnelHandler.ParentRefusal)?.status == status, "\(answer)")
            #expect(heldWrite != nil, "the held write fails with the tunnel")
            #expect(try f.written() == "", "nothing was sent after the CONNECT")
            #expect(try f.channel.readInbound(as: ByteBuffer.self) == nil, "the answer's body is not handed up")
            #expect(!f.channel.isActive)
        }
    }

    @Test func garbageAnOversizedHeadOrAnEarlyCloseFailAsWell() async throws {
        let garbage = try Fixture()
        try await garbage.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).get()
        var failure: (any Error)?
        garbage.result.futureResult.whenFailure { failure = $0 }
        try garbage.channel.writeInbound(ByteBuffer(string: "SSH-2.0-OpenSSH\r\n\r\n"))
        #expect("\(failure.map { "\($0)" } ?? "")".contains("not HTTP"))

        let oversized = try Fixture()
        try await oversized.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).get()
        var oversizedFailure: (any Error)?
        oversized.result.futureResult.whenFailure { oversizedFailure = $0 }
        try oversized.channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 17_000)))
        #expect("\(oversizedFailure.map { "\($0)" } ?? "")".contains("over 16384 bytes"))
        #expect(!oversized.channel.isActive)

        let early = try Fixture()
        try await early.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).get()
        var earlyFailure: (any Error)?
        early.result.futureResult.whenFailure { earlyFailure = $0 }
        try await early.channel.close().get()
        #expect(earlyFailure is ParentTunnelHandler.ParentClosed)
    }

    @Test func aParentThatNeverAnswersFailsAtTheAnswerTimeout() async throws {
        let channel = EmbeddedChannel()
        let result = channel.eventLoop.makePromise(of: Void.self)
        try channel.pipeline.syncOperations.addHandler(
            ParentTunnelHandler(target: "192.0.2.7:443", credentials: nil, answerTimeout: .seconds(5), result: result))
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).get()
        var failure: (any Error)?
        result.futureResult.whenFailure { failure = $0 }
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(4999))
        #expect(failure == nil && channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect("\(failure.map { "\($0)" } ?? "")" == "the parent did not answer CONNECT within 5000 ms")
        #expect(!channel.isActive)
    }

    @Test func aStatusLineWithControlBytesIsSanitizedBeforeItIsQuoted() async throws {
        let f = try Fixture()
        try await f.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).get()
        var failure: (any Error)?
        f.result.futureResult.whenFailure { failure = $0 }
        try f.channel.writeInbound(ByteBuffer(string: "HTTP/1.1 403 No\u{1B}[31m\nX-Injected: 1\r\n\r\n"))
        let line = (failure as? ParentTunnelHandler.ParentRefusal)?.statusLine ?? ""
        #expect(line.hasPrefix("HTTP/1.1 403 No"))
        #expect(!line.contains("\u{1B}") && !line.contains("\n"), "\(line.debugDescription)")
    }

    /// Interim answers before the final one (RFC 9110 §15.2) are skipped, within the head bound;
    /// a 101 is no interim answer to a CONNECT.
    @Test func interimAnswersAreSkippedWithinTheHeadBound() async throws {
        let f = try Fixture()
        try await f.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).get()
        _ = try f.written()
        f.channel.writeAndFlush(ByteBuffer(string: "hello"), promise: nil)
        var succeeded = false
        f.result.futureResult.whenSuccess { succeeded = true }
        try f.channel.writeInbound(ByteBuffer(string: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n"))
        #expect(!succeeded && f.channel.isActive)
        try f.channel.writeInbound(ByteBuffer(string: "\r\nHTTP/1.1 200 Connection established\r\n\r\nSERVER-FIRST"))
        #expect(succeeded)
        #expect(try f.written() == "hello")
        #expect(try f.channel.readInbound(as: ByteBuffer.self).map { String(buffer: $0) } == "SERVER-FIRST")

        let switching = try Fixture()
        try await switching.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).get()
        var refusal: (any Error)?
        switching.result.futureResult.whenFailure { refusal = $0 }
        try switching.channel.writeInbound(ByteBuffer(string: "HTTP/1.1 101 Switching Protocols\r\n\r\n"))
        #expect((refusal as? ParentTunnelHandler.ParentRefusal)?.status == 101)

        // Endless interim answers: failed once their heads pass 16 KiB, nothing handed up.
        let endless = try Fixture()
        try await endless.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).get()
        var failure: (any Error)?
        endless.result.futureResult.whenFailure { failure = $0 }
        for _ in 0..<1000 where failure == nil {
            try? endless.channel.writeInbound(ByteBuffer(string: "HTTP/1.1 102 Processing\r\n\r\n"))
        }
        #expect("\(failure.map { "\($0)" } ?? "")".contains("head over 16384 bytes"))
        #expect(!endless.channel.isActive)
        #expect(try endless.channel.readInbound(as: ByteBuffer.self) == nil)
    }

    /// An https:// parent: TLS to it sits below this handler. Its handshake event must not reach
    /// the handlers above (the origin's TLS gate would take it for the origin's handshake), and
    /// its failure fails the tunnel as a TLS failure, not as an unreachable parent.
    @Test func theParentsOwnTLSStaysBelowTheTunnel() async throws {
        final class Events: ChannelInboundHandler, @unchecked Sendable {
            typealias InboundIn = ByteBuffer
            var seen: [String] = []
            func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) { seen.append("\(event)") }
        }
        let f = try Fixture()
        let events = Events()
        try f.channel.pipeline.syncOperations.addHandler(events)
        try await f.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).get()
        let parentHandshake = TLSClientEvent.handshakeCompleted(negotiatedProtocol: nil, resumed: false, tlsVersion: "TLSv1.3")
        f.channel.pipeline.fireUserInboundEventTriggered(parentHandshake)
        #expect(events.seen.isEmpty, "the parent's handshake stops at the tunnel")
        try f.channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 Connection established\r\n\r\n"))
        // Past the answer the tunnel is gone: the origin's handshake event goes up.
        f.channel.pipeline.fireUserInboundEventTriggered(parentHandshake)
        #expect(events.seen.count == 1)

        let g = try Fixture()
        try await g.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 3128)).get()
        var failure: (any Error)?
        g.result.futureResult.whenFailure { failure = $0 }
        g.channel.pipeline.fireErrorCaught(TLSError.certificateInvalid(host: "parent.test", reason: "unable to get local issuer certificate"))
        let tls = try #require(failure as? ParentTunnelHandler.ParentTLSFailed, "\(String(describing: failure))")
        #expect("\(tls)".contains("unable to get local issuer certificate"))
        #expect(!g.channel.isActive)
    }
}
