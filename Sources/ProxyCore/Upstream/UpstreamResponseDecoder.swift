import NIOCore
import NIOHTTP1

/// Where an upstream connection stands between requests, shared by its decoder and its handler.
final class UpstreamResponseState {
    /// A request head went out and its final response has not ended yet.
    var awaitingResponse = false
    /// The connection switched protocols: what follows the 101 is tunnel bytes, not HTTP.
    var passthrough = false
}

@available(*, unavailable)
extension UpstreamResponseState: Sendable {}

/// Why an upstream connection was closed for framing reasons.
struct UpstreamFramingError: Error, CustomStringConvertible {
    var description: String

    static let bytesWithoutRequest = UpstreamFramingError(description: "the origin sent bytes while no request was outstanding")
    static let bytesAfterResponse = UpstreamFramingError(description: "the origin sent bytes after the end of its response")
}

/// NIO's response decoder, plus one rule it cannot know: an origin may only send a response to a
/// request. Bytes that arrive while the connection is idle (pooled), or that follow the end of a
/// response in the same read (a body longer than its Content-Length, a 204/304/HEAD response with
/// a body), fail the decoder, which closes the connection: it is never reused with unread bytes
/// that the next exchange would take for its response.
final class UpstreamResponseDecoder: WriteObservingByteToMessageDecoder {
    typealias InboundOut = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart

    private let inner: HTTPResponseDecoder
    let state: UpstreamResponseState

    init(state: UpstreamResponseState) {
        self.state = state
        self.inner = HTTPResponseDecoder(
            leftOverBytesStrategy: .forwardBytes,
            informationalResponseStrategy: .forward,
            limitConfiguration: MessageFraming.responseDecoderLimits
        )
    }

    func write(data: HTTPClientRequestPart) {
        if case .head = data { state.awaitingResponse = true }
        inner.write(data: data)
    }

    func decoderAdded(context: ChannelHandlerContext) {
        inner.decoderAdded(context: context)
    }

    func decoderRemoved(context: ChannelHandlerContext) {
        inner.decoderRemoved(context: context)
    }

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard state.awaitingResponse || state.passthrough else { throw UpstreamFramingError.bytesWithoutRequest }
        let result = try inner.decode(context: context, buffer: &buffer)
        if buffer.readableBytes > 0 && !state.awaitingResponse && !state.passthrough {
            throw UpstreamFramingError.bytesAfterResponse
        }
        return result
    }

    func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try inner.decodeLast(context: context, buffer: &buffer, seenEOF: seenEOF)
    }
}

@available(*, unavailable)
extension UpstreamResponseDecoder: Sendable {}
