import NIOCore
import NIOHTTP1
import ProxyHTTP

/// Why an upstream connection was closed for framing reasons.
struct UpstreamFramingError: Error, CustomStringConvertible {
    var description: String

    static let bytesWithoutRequest = UpstreamFramingError(description: "the origin sent bytes while no request was outstanding")
    static let bytesAfterResponse = UpstreamFramingError(description: "the origin sent bytes after the end of its response")
}

/// The upstream response decoder the codec's `UpstreamResponseReader` replaced, kept for the
/// differential tests: NIO's response decoder, plus one rule it cannot know: an origin may only send a response to a
/// request. Bytes that arrive while the connection is idle (pooled), or that follow the end of a
/// response in the same read (a body longer than its Content-Length, a 204/304/HEAD response with
/// a body), fail the decoder, which closes the connection: it is never reused with unread bytes
/// that the next exchange would take for its response. Its connection tells it when a request
/// goes out (the encoders are gone, so it no longer watches writes) and when a response ended.
package final class LegacyUpstreamResponseDecoder: ByteToMessageDecoder {
    package typealias InboundOut = HTTPClientResponsePart

    private let inner: HTTPResponseDecoder
    /// A request head went out and its final response has not ended yet.
    private(set) var awaitingResponse = false
    /// The connection switched protocols: what follows the 101 is tunnel bytes, not HTTP.
    private(set) var passthrough = false

    package init() {
        self.inner = HTTPResponseDecoder(
            leftOverBytesStrategy: .forwardBytes,
            informationalResponseStrategy: .forward,
            limitConfiguration: MessageFraming.responseDecoderLimits
        )
    }

    /// A request head went out: its response is expected (and a HEAD's has no body).
    package func requestSent(_ head: HTTPRequestHead) {
        awaitingResponse = true
        inner.write(data: .head(head))
    }

    /// The final response's end was delivered.
    package func responseEnded() {
        awaitingResponse = false
    }

    /// What follows is tunnel bytes.
    package func startPassthrough() {
        passthrough = true
    }

    package func decoderAdded(context: ChannelHandlerContext) {
        inner.decoderAdded(context: context)
    }

    package func decoderRemoved(context: ChannelHandlerContext) {
        inner.decoderRemoved(context: context)
    }

    package func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard awaitingResponse || passthrough else { throw UpstreamFramingError.bytesWithoutRequest }
        let result = try inner.decode(context: context, buffer: &buffer)
        if buffer.readableBytes > 0 && !awaitingResponse && !passthrough {
            throw UpstreamFramingError.bytesAfterResponse
        }
        return result
    }

    package func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try inner.decodeLast(context: context, buffer: &buffer, seenEOF: seenEOF)
    }
}

@available(*, unavailable)
extension LegacyUpstreamResponseDecoder: Sendable {}
