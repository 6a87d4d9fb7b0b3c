import NIOCore
import NIOHTTP1
import ProxyHTTP
import ProxyKit

/// The request side of the stack the codec replaced, kept as the differential tests' reference:
/// the client connection's decoding handler before `ClientRequestReader`, NIO's request decoder
/// (llhttp), embedded, plus what the proxy needed around it.
/// - It reports the first bytes of a request, so the header timeout runs from the moment a
///   client starts a request rather than from when it went idle, and counts the bytes of its
///   first line (a head that overflows with a long request line is answered 414, not 431).
/// - It is the read-ahead gate for pipelined requests: when the connection's queue of requests is
///   full (`hold`), bytes stay unparsed in the handler's buffer and the connection handler asks
///   for no further socket read; `release` parses them once the queue has room. Bytes are given to
///   llhttp at most `feedLimit` at a time, so what one `hold` leaves parsed is bounded by one such
///   slice (the requests in it), whatever a client pipelines.
///
/// One handler instead of an observer in front of NIO's decoder: every read, read-complete and
/// read request crossed both before.
package final class ClientRequestDecoder: ByteToMessageDecoder {
    package typealias InboundOut = HTTPServerRequestPart

    /// The most bytes llhttp is given at once: the size of one large socket read.
    static let feedLimit = 64 * 1024

    private let inner: HTTPRequestDecoder
    private var context: ChannelHandlerContext?

    /// Fires once on the next bytes, then disarms until `arm` is called again.
    private var onBytes: (() -> Void)?
    /// A request started and its first line has not ended yet (its LF not seen).
    private var requestLineOpen = false
    /// Bytes of the current request's first line seen so far (all of it once its LF arrived).
    package private(set) var requestLineLength = 0
    /// Bytes at the front of the buffer already looked at (llhttp keeps an unfinished head's
    /// bytes in the buffer until the head is complete).
    private var seen = 0

    /// llhttp is not to be given more bytes for now.
    private(set) var holding = false
    /// Bytes arrived while holding and wait unparsed.
    private var bytesHeld = false
    /// A release is scheduled for the next event-loop turn.
    private var releaseScheduled = false

    package init() {
        self.inner = HTTPRequestDecoder(
            leftOverBytesStrategy: .forwardBytes,
            informationalResponseStrategy: .drop,
            limitConfiguration: MessageFraming.requestDecoderLimits
        )
    }

    package func arm(_ callback: @escaping () -> Void) {
        onBytes = callback
    }

    package func disarm() {
        onBytes = nil
    }

    // MARK: - the read-ahead gate

    /// The queue of pipelined requests is full: bytes from now on wait, unparsed.
    package func hold() {
        holding = true
    }

    /// The queue has room again: the waiting bytes are parsed on the next event-loop turn (not
    /// from inside the handler that asked, which is in the middle of its own work).
    package func release() {
        holding = false
        // Only when bytes wait: most releases (after every exchange) find nothing held.
        guard bytesHeld, !releaseScheduled, let context else { return }
        releaseScheduled = true
        context.eventLoop.assumeIsolated().execute { [self] in
            releaseScheduled = false
            guard !holding, bytesHeld, let context = self.context else { return }
            bytesHeld = false
            // An empty read makes the handler run its decode loop over the bytes it keeps.
            context.pipeline.syncOperations.fireChannelRead(NIOAny(context.channel.allocator.buffer(capacity: 0)))
            context.pipeline.syncOperations.fireChannelReadComplete()
        }
    }

    // MARK: - ByteToMessageDecoder

    package func decoderAdded(context: ChannelHandlerContext) {
        self.context = context
        inner.decoderAdded(context: context)
    }

    package func decoderRemoved(context: ChannelHandlerContext) {
        inner.decoderRemoved(context: context)
        self.context = nil
    }

    package func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard buffer.readableBytes > 0 else { return .needMoreData }
        guard !holding else {
            bytesHeld = true
            return .needMoreData
        }
        // llhttp is given the bytes it has seen and kept (an unfinished head stays in the buffer
        // until it is complete; its limits bound it) plus at most `feedLimit` new ones.
        let length = min(buffer.readableBytes, seen + Self.feedLimit)
        guard length < buffer.readableBytes else {
            observe(buffer)
            _ = try inner.decode(context: context, buffer: &buffer)
            seen = buffer.readableBytes
            return .needMoreData
        }
        // A large buffer (bytes kept while holding, or a big read): one slice at a time, so a
        // `hold` from the requests parsed in one slice stops before the next.
        var slice = buffer.getSlice(at: buffer.readerIndex, length: length)!
        observe(slice)
        _ = try inner.decode(context: context, buffer: &slice)
        buffer.moveReaderIndex(forwardBy: length - slice.readableBytes)
        seen = slice.readableBytes
        return .continue
    }

    package func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // End of input while holding: the client is gone, nobody will be answered; parsing what
        // waits would only queue requests to drop them.
        if seenEOF && holding {
            buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
            return .needMoreData
        }
        // Removal (a tunnel takes over) or end of input: everything goes to llhttp, which hands
        // bytes after a CONNECT or upgrade head on as tunnel bytes.
        observe(buffer)
        let state = try inner.decodeLast(context: context, buffer: &buffer, seenEOF: seenEOF)
        seen = buffer.readableBytes
        return state
    }

    /// Looks at the bytes not seen before: the first bytes of a request fire the armed callback;
    /// the first line's length is counted until its LF.
    private func observe(_ buffer: ByteBuffer) {
        guard buffer.readableBytes > seen else { return }
        if let callback = onBytes {
            onBytes = nil
            requestLineOpen = true
            requestLineLength = 0
            callback()
        }
        guard requestLineOpen else { return }
        let view = buffer.readableBytesView.dropFirst(seen)
        if let lf = view.firstIndex(of: UInt8(ascii: "\n")) {
            requestLineOpen = false
            requestLineLength += lf - view.startIndex
        } else {
            requestLineLength += view.count
        }
    }
}

@available(*, unavailable)
extension ClientRequestDecoder: Sendable {}

extension RequestParseFailure {
    /// The answer the forward path gave to a request llhttp rejected, before the codec. Every such
    /// answer closed the connection: after a parse error nothing that follows on it can be framed
    /// reliably.
    package static func proxyError(for error: HTTPParserError, requestLineLength: Int) -> ProxyError {
        switch error {
        case .headerOverflow:
            if requestLineLength > MessageFraming.maxRequestTargetLength {
                return ProxyError(
                    .uriTooLong,
                    "the request line is \(requestLineLength) bytes or more; the limit for the target is \(MessageFraming.maxRequestTargetLength)"
                )
            }
            return ProxyError(
                .headersTooLarge,
                "request headers are too large (at most \(MessageFraming.maxRequestFieldCount) fields and \(MessageFraming.maxHeadBytes) bytes)"
            )
        case .unknown:
            // llhttp's HPE_INVALID_TRANSFER_ENCODING and HPE_CR_EXPECTED land here.
            return .malformed(
                "invalid framing: Transfer-Encoding must end in chunked (RFC 9112 §6.3), and lines must end in CRLF"
            )
        case .unexpectedContentLength:
            return .malformed("Content-Length is not allowed here (duplicate, or together with Transfer-Encoding)")
        case .invalidContentLength:
            return .malformed("invalid Content-Length")
        case .invalidChunkSize:
            return .malformed("invalid chunk size in the chunked body")
        case .invalidHeaderToken:
            return .malformed("invalid header field (name, value or line folding)")
        case .lfExpected, .strictModeAssertion, .invalidConstant:
            return .malformed("invalid line ending or framing (lines must end in CRLF)")
        case .invalidMethod:
            return .malformed("invalid method")
        case .invalidURL:
            return .malformed("invalid request target")
        case .invalidVersion:
            return .malformed("invalid HTTP version")
        default:
            return .malformed("the request could not be parsed (\(error))")
        }
    }
}
