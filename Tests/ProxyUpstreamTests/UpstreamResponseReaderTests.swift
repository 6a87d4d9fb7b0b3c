import HTTP1Codec
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import ProxyUpstream

/// The upstream side's decoder, byte for byte: what the exchange receives from an origin's bytes,
/// whatever reads they arrive in, and which bytes close the connection.
@Suite("Upstream response reader")
struct UpstreamResponseReaderTests {
    /// Keeps the errors the reader raised; reads go on to the channel's inbound queue, events as
    /// the parts the connection hands on (a head taken from the reader at once, as the connection
    /// does), raw bytes once `reader` is cleared (it was removed).
    final class ErrorSink: ChannelInboundHandler {
        typealias InboundIn = UpstreamResponseEvent
        var errors: [any Error] = []
        var reader: UpstreamResponseReader?

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard let reader else {
                context.fireChannelRead(data)
                return
            }
            let part: UpstreamResponsePart
            switch unwrapInboundIn(data) {
            case .head:
                guard let head = reader.takeHead() else {
                    errors.append(Missing.head)
                    return
                }
                part = .head(head)
            case .body(let buffer): part = .body(buffer)
            case .end(let trailers): part = .end(trailers)
            }
            context.fireChannelRead(NIOAny(part))
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            errors.append(error)
        }

        enum Missing: Error { case head }
    }

    /// What reached the handler behind the reader: the parts as text (consecutive body slices
    /// joined: the split is the reads', not the message's), the raw bytes handed on, the errors.
    final class Harness {
        let channel = EmbeddedChannel()
        let reader = UpstreamResponseReader()
        let errorSink = ErrorSink()
        let decoder: ByteToMessageHandler<UpstreamResponseReader>
        private var collected: [String] = []

        init() throws {
            decoder = ByteToMessageHandler(reader)
            try channel.pipeline.syncOperations.addHandler(decoder)
            try channel.pipeline.syncOperations.addHandler(errorSink)
            errorSink.reader = reader
        }

        func send(_ text: String) {
            _ = try? channel.writeInbound(ByteBuffer(string: text))
        }

        var events: [String] {
            while let part = try? channel.readInbound(as: UpstreamResponsePart.self) {
                switch part {
                case .head(let head):
                    let fields = head.fieldList.map { "\($0.0): \($0.1)" }.joined(separator: "|")
                    collected.append("head \(head.minorVersion) \(head.status) [\(fields)]")
                case .body(let buffer):
                    let text = String(buffer: buffer)
                    if let last = collected.last, last.hasPrefix("body ") {
                        collected[collected.count - 1] = last + text
                    } else {
                        collected.append("body " + text)
                    }
                case .end(let trailers):
                    collected.append("end" + (trailers.map { " [" + $0.map { "\($0.name): \($0.value)" }.joined(separator: "|") + "]" } ?? ""))
                }
            }
            return collected
        }

        var raw: [UInt8] {
            var bytes: [UInt8] = []
            while let buffer = try? channel.readInbound(as: ByteBuffer.self) { bytes += buffer.readableBytesView }
            return bytes
        }

        var errors: [any Error] { errorSink.errors }
        var codecError: HTTP1CodecError? { errors.first as? HTTP1CodecError }
    }

    static let chunked =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Sum: 9\r\n\r\n"
    static let chunkedEvents = ["head 1 200 [Transfer-Encoding: chunked|X-A: 1]", "body hello world", "end [X-Sum: 9]"]

    @Test func aResponseReadsTheSameWhereverTheReadsSplitIt() throws {
        let cases: [(String, [String])] = [
            ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: o\r\n\r\nhello", ["head 1 200 [Content-Length: 5|Server: o]", "body hello", "end"]),
            (Self.chunked, Self.chunkedEvents),
            ("HTTP/1.0 204 No Content\r\nX: y\r\n\r\n", ["head 0 204 [X: y]", "end"]),
        ]
        for (wire, expected) in cases {
            let bytes = Array(wire.utf8)
            for cut in 1..<bytes.count {
                let h = try Harness()
                h.reader.requestSent(method: .get, upgradeRequested: false)
                _ = try? h.channel.writeInbound(ByteBuffer(bytes: bytes[..<cut]))
                _ = try? h.channel.writeInbound(ByteBuffer(bytes: bytes[cut...]))
                #expect(h.events == expected, "cut at \(cut) of \(wire.debugDescription)")
                #expect(h.errors.isEmpty, "cut at \(cut)")
            }
        }
    }

    @Test func keptAliveConnectionsReadOneResponsePerRequest() throws {
        let h = try Harness()
        for round in 0..<3 {
            h.reader.requestSent(method: .get, upgradeRequested: false)
            h.send("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n\(round)")
        }
        #expect(h.events == (0..<3).flatMap { ["head 1 200 [Content-Length: 1]", "body \($0)", "end"] })
        #expect(h.errors.isEmpty)
    }

    @Test func bytesNobodyAskedForAreRefused() throws {
        let idle = try Harness()
        idle.send("HTTP/1.1 200 OK\r\n\r\n")
        #expect(idle.events.isEmpty)
        #expect(idle.codecError == .bytesWithoutRequest)

        // A body longer than its Content-Length: the response is delivered, the extra bytes refused.
        let longer = try Harness()
        longer.reader.requestSent(method: .get, upgradeRequested: false)
        longer.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA")
        #expect(longer.events == ["head 1 200 [Content-Length: 2]", "body ok", "end"])
        #expect(longer.codecError == .bytesAfterResponse)

        // Empty lines after a response are bytes after it too (llhttp skipped them): the
        // connection is closed, not pooled.
        let crlf = try Harness()
        crlf.reader.requestSent(method: .get, upgradeRequested: false)
        crlf.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok\r\n")
        #expect(crlf.events == ["head 1 200 [Content-Length: 2]", "body ok", "end"])
        #expect(crlf.codecError == .bytesAfterResponse)

        // A HEAD's response has no body, whatever its Content-Length says: body bytes are extra.
        let head = try Harness()
        head.reader.requestSent(method: .head, upgradeRequested: false)
        head.send("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        #expect(head.events == ["head 1 200 [Content-Length: 5]", "end"])
        #expect(head.codecError == .bytesAfterResponse)
    }

    @Test func interimHeadsPrecedeTheFinalOne() throws {
        let h = try Harness()
        h.reader.requestSent(method: .post, upgradeRequested: false)
        h.send("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        #expect(h.events == ["head 1 100 []", "head 1 103 [Link: </a.css>]", "head 1 201 [Content-Length: 0]", "end"])
        #expect(h.errors.isEmpty)
    }

    @Test func afterASwitchTheRestIsTunnelBytesHandedOnWhenTheReaderGoes() async throws {
        let h = try Harness()
        h.reader.requestSent(method: .get, upgradeRequested: true)
        h.send("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n\u{81}\u{02}hi")
        h.send("HTTP/1.1 200 OK\r\n\r\n")
        #expect(h.events == ["head 1 101 [Upgrade: websocket|Connection: upgrade]", "end"])
        #expect(h.raw.isEmpty, "nothing handed on while the reader is in place")
        h.errorSink.reader = nil
        let removed = h.channel.pipeline.syncOperations.removeHandler(h.decoder)
        h.channel.embeddedEventLoop.run()
        try await removed.get()
        #expect(h.raw == Array("\u{81}\u{02}hiHTTP/1.1 200 OK\r\n\r\n".utf8), "every byte after the 101, unparsed, in order")
        #expect(h.errors.isEmpty)
    }

    @Test func aSwitchNobodyAskedForIsRefused() throws {
        let h = try Harness()
        h.reader.requestSent(method: .get, upgradeRequested: false)
        h.send("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
        #expect(h.events.isEmpty)
        #expect(h.codecError == .unaskedSwitch)
    }

    @Test func theCloseEndsACloseDelimitedBodyAndTruncatesAFramedOne() throws {
        let delimited = try Harness()
        delimited.reader.requestSent(method: .get, upgradeRequested: false)
        delimited.send("HTTP/1.1 200 OK\r\n\r\nuntil ")
        delimited.send("close")
        delimited.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(delimited.events == ["head 1 200 []", "body until close", "end"])
        #expect(delimited.errors.isEmpty)

        for wire in ["HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "HTTP/1.1 200 OK\r\nContent-"] {
            let cut = try Harness()
            cut.reader.requestSent(method: .get, upgradeRequested: false)
            cut.send(wire)
            cut.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
            #expect(cut.codecError == UpstreamResponseReader.truncated, "\(wire.debugDescription)")
            #expect(!cut.events.contains("end"), "\(wire.debugDescription)")
        }

        // Closed between responses: nothing to report.
        let clean = try Harness()
        clean.reader.requestSent(method: .get, upgradeRequested: false)
        clean.send("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        clean.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(clean.errors.isEmpty)
    }

    @Test func framingItCannotRelayIsRefusedAsSuch() throws {
        let h = try Harness()
        h.reader.requestSent(method: .get, upgradeRequested: false)
        h.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n")
        let error = try #require(h.codecError)
        #expect(error.isUnrelayable)
        #expect(error.reason == "unsupported transfer coding 'gzip'")

        let smuggle = try Harness()
        smuggle.reader.requestSent(method: .get, upgradeRequested: false)
        smuggle.send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        #expect(smuggle.events.isEmpty, "nothing of a response framed two ways reaches the exchange")
        #expect(smuggle.codecError?.kind == .invalidResponse)
        #expect(smuggle.codecError?.isUnrelayable == false)
    }

    @Test func theRequestHeadSaysWhatTheResponseMayBe() throws {
        let upgrade = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: ["Upgrade": "websocket", "Connection": "Upgrade"])
        let h = try Harness()
        h.reader.requestSent(upgrade)
        h.send("HTTP/1.1 101 Switching Protocols\r\n\r\n")
        #expect(h.events == ["head 1 101 []", "end"])

        let plain = try Harness()
        plain.reader.requestSent(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: ["Upgrade": "websocket"]))
        plain.send("HTTP/1.1 101 Switching Protocols\r\n\r\n")
        #expect(plain.codecError == .unaskedSwitch, "Upgrade without Connection: upgrade asks for nothing")

        let head = try Harness()
        head.reader.requestSent(HTTPRequestHead(version: .http1_1, method: .HEAD, uri: "/"))
        head.send("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n")
        #expect(head.events == ["head 1 200 [Content-Length: 9]", "end"])
    }
}
