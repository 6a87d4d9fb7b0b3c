import HTTP1Codec
import NIOCore
import NIOHTTP1

/// The upstream connection's one decoding handler: the project's HTTP/1 codec (`MessageDecoder`
/// in the response role) over the read buffer, handing on response parts.
///
/// - One response (after any interim 1xx heads) per request its connection says went out
///   (`requestSent`); a HEAD's response has no body, a 101 to a request that asked to upgrade ends
///   the HTTP. Bytes that arrive while no request is outstanding (an idle, pooled connection) or
///   that follow the end of a response in the same read (a body longer than its Content-Length, a
///   204/304/HEAD response with a body) are refused: the connection is never reused with unread
///   bytes the next exchange would take for its response.
/// - Refusals are thrown as `HTTP1CodecError` (kind `.invalidResponse`, the texts the forward path
///   has always logged; `isUnrelayable` for framing it parsed but cannot relay), which
///   `ByteToMessageHandler` reports through `errorCaught`: the connection closes with it.
/// - The end of a body delimited by the close arrives as the end of the response; a close in the
///   middle of a message is refused (`truncated`).
/// - Empty lines after a response are bytes after it (llhttp skipped them): the connection is
///   closed rather than pooled (the differential tests' difference 15, RFC 9112 §2.2).
/// - After a 101 the rest of the buffer is not parsed: it is handed on as raw bytes when the
///   handler is removed (the tunnel's first bytes from the origin).
///
/// Heads are handed on as the codec parsed them (a slice of the read buffer and offsets into it):
/// the forward path writes the kept field lines from it without converting them. The event says
/// a head arrived; the handler behind takes it from the reader at once (`takeHead`).
///
/// Every event a read yields is handed on in that read, including an end that needs no further
/// byte (`ByteToMessageHandler` calls `decode` only with bytes).
package final class UpstreamResponseReader: ByteToMessageDecoder {
    package typealias InboundOut = UpstreamResponseEvent

    private var decoder = MessageDecoder(role: .response)
    /// The head a `.head` event announces, until the next handler takes it (`takeHead`).
    private var parsedHead: HTTP1Head?

    /// A close in the middle of a response (its head, or a framed body); the text llhttp's EOF
    /// error gave, as the request side's.
    package static let truncated = HTTP1CodecError(.invalidResponse, "unparseable response (stream ended at an unexpected time)")

    package init() {}

    /// A request went out: its response may come. `upgradeRequested`: the request asked to switch
    /// protocols, so a 101 answers it.
    package func requestSent(method: MethodKind, upgradeRequested: Bool) {
        decoder.expectResponse(ResponseContext(method: method, upgradeRequested: upgradeRequested))
    }

    /// A request head as it goes out (`requestSent(method:upgradeRequested:)` from its fields).
    package func requestSent(_ head: HTTPRequestHead) {
        let upgradeRequested =
            head.headers.contains(name: "upgrade")
            && head.headers[canonicalForm: "connection"].contains { $0.lowercased() == "upgrade" }
        requestSent(method: Self.methodKind(head.method), upgradeRequested: upgradeRequested)
    }

    package static func methodKind(_ method: HTTPMethod) -> MethodKind {
        switch method {
        case .GET: .get
        case .HEAD: .head
        case .POST: .post
        case .CONNECT: .connect
        case .OPTIONS: .options
        case .TRACE: .trace
        default: .other
        }
    }

    /// The head the last `.head` event announced; once.
    package func takeHead() -> HTTP1Head? {
        parsedHead.take()
    }

    package func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        try decodeAll(context: context, buffer: &buffer)
        return .needMoreData
    }

    /// Hands on every event the buffer holds; stops when the codec needs more bytes or stopped.
    private func decodeAll(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws {
        while true {
            switch try decoder.next(&buffer) {
            case .head(let head):
                parsedHead = head
                context.fireChannelRead(wrapInboundOut(.head))
            case .body(let slice):
                context.fireChannelRead(wrapInboundOut(.body(slice)))
            case .end(let trailers):
                context.fireChannelRead(wrapInboundOut(.end(trailers.map { HTTPHeaders($0.fieldList) })))
            case .needMoreBytes, .stopped:
                return
            }
        }
    }

    package func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        guard seenEOF else {
            // Removal after a 101: what the codec did not parse is the tunnel's first bytes.
            if buffer.readableBytes > 0 {
                context.fireChannelRead(NIOAny(buffer.readSlice(length: buffer.readableBytes)!))
            }
            return .needMoreData
        }
        try decodeAll(context: context, buffer: &buffer)
        switch decoder.inputEnded() {
        case .clean:
            break
        case .bodyEnded:
            context.fireChannelRead(wrapInboundOut(.end(nil)))
        case .truncated:
            throw Self.truncated
        }
        return .needMoreData
    }
}

@available(*, unavailable)
extension UpstreamResponseReader: Sendable {}

/// What the reader fires: a head (taken from the reader, `takeHead`), a slice of the body, the
/// end with its trailers (rare: converted to fields). The head does not travel in the event: a
/// value that large does not fit `NIOAny`'s inline storage, so every event (head, body and end
/// alike) would cost an allocation.
package enum UpstreamResponseEvent {
    case head
    case body(ByteBuffer)
    case end(HTTPHeaders?)
}

/// A part of a response as the upstream connection hands it to its exchange.
package enum UpstreamResponsePart {
    case head(HTTP1Head)
    case body(ByteBuffer)
    case end(HTTPHeaders?)
}
