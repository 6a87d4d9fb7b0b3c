import HTTP1Codec
import NIOCore
import NIOHTTP1
import ProxyKit

/// The client connection's one decoding handler: the project's HTTP/1 codec (`MessageDecoder`)
/// over the read buffer, handing on the proxy's own request parts (a head, body slices of the read
/// buffer, an end), plus what the proxy needs around it.
/// - It reports the first bytes of a request (`arm`), so the header timeout runs from the moment a
///   client starts a request rather than from when it went idle.
/// - It is the read-ahead gate for pipelined requests: when the connection's queue of requests is
///   full (`hold`), bytes stay unparsed in the handler's buffer and the connection handler asks for
///   no further socket read; `release` parses them once the queue has room. The gate is checked
///   before every part, so a `hold` stops parsing at the part that asked for it.
/// - After a CONNECT head, or the end of a request that asked to upgrade, the rest of the buffer
///   is not parsed: it is handed on as raw bytes when the handler is removed (the tunnel's first
///   bytes). A CONNECT head followed by bytes in the same read says so (`RequestHead.bytesFollowed`);
///   after a CONNECT refused on a connection that stays open (`resumeAfterRefusal`), what follows is
///   parsed as HTTP again. After a request that closes the connection, bytes are dropped unparsed
///   (RFC 9112 §9.6).
///
/// A head does not travel in the event it fires: a value that large does not fit `NIOAny`'s
/// inline storage, so every event (head, body and end alike) would cost an allocation. It waits
/// in `pendingHead` for the handler behind (`takeHead`).
///
/// The codec refuses bytes with the kind and text the client is answered with; they reach the
/// connection handler as `Refusal` through `errorCaught`, once: what follows a refusal is not parsed.
final class ClientRequestReader: ByteToMessageDecoder {
    typealias InboundOut = ClientRequestEvent

    /// The head a `.head` event announced, until the connection handler takes it (`takeHead`).
    var pendingHead: RequestHead?

    /// The client's bytes were refused: the answer.
    struct Refusal: Error {
        var error: ProxyError
    }

    private var decoder = MessageDecoder(role: .request)
    private var context: ChannelHandlerContext?

    /// Fires once on the next bytes, then disarms until `arm` is called again.
    private var onBytes: (() -> Void)?

    /// No more parts are to be parsed for now.
    private(set) var holding = false
    /// Bytes arrived while holding and wait unparsed.
    private var bytesHeld = false
    /// A release is scheduled for the next event-loop turn.
    private var releaseScheduled = false
    /// The last head was a CONNECT's: the codec stops after it.
    private var afterTunnelHead = false
    /// That CONNECT was refused and the connection stays: parse what follows it as HTTP.
    private var resumesAfterTunnelHead = false

    init() {}

    /// The head the last `.head` event announced; once.
    func takeHead() -> RequestHead? {
        pendingHead.take()
    }

    func arm(_ callback: @escaping () -> Void) {
        onBytes = callback
    }

    func disarm() {
        onBytes = nil
    }

    // MARK: - the read-ahead gate

    /// The queue of pipelined requests is full: bytes from now on wait, unparsed.
    func hold() {
        holding = true
    }

    /// The queue has room again: the waiting bytes are parsed on the next event-loop turn (not
    /// from inside the handler that asked, which is in the middle of its own work).
    func release() {
        holding = false
        // Only when bytes wait: most releases (after every exchange) find nothing held.
        guard bytesHeld else { return }
        scheduleParse()
    }

    /// The request just read was refused and the connection stays open for the client's next try.
    /// After a CONNECT (the codec stopped after its head) what follows is HTTP again; bytes read
    /// meanwhile are parsed on the next event-loop turn.
    func resumeAfterRefusal() {
        guard afterTunnelHead else { return }
        resumesAfterTunnelHead = true
        bytesHeld = true
        scheduleParse()
    }

    /// Runs the decode loop over the bytes the handler keeps, on the next event-loop turn.
    private func scheduleParse() {
        guard !releaseScheduled, let context else { return }
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

    func decoderAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func decoderRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard buffer.readableBytes > 0 else { return .needMoreData }
        guard !holding else {
            bytesHeld = true
            return .needMoreData
        }
        if let callback = onBytes {
            onBytes = nil
            callback()
        }
        switch try nextEvent(&buffer) {
        case .head(let head):
            var requestHead = RequestHead(parsed: head)
            afterTunnelHead = head.framing == .tunnel
            requestHead.bytesFollowed = afterTunnelHead && buffer.readableBytes > 0
            pendingHead = requestHead
            context.fireChannelRead(wrapInboundOut(.head))
        case .body(let slice):
            context.fireChannelRead(wrapInboundOut(.body(slice)))
        case .end(let trailers):
            fireEnd(trailers, context: context)
        case .needMoreBytes:
            return .needMoreData
        case .stopped(.close):
            // Nothing after a request that closes the connection is read (RFC 9112 §9.6).
            buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
            return .needMoreData
        case .stopped(.tunnel) where resumesAfterTunnelHead:
            resume()
            return .continue
        case .stopped:
            // Tunnel bytes: handed on when the handler is removed.
            return .needMoreData
        }
        // What needs no further byte follows at once, gate or not (as the parts of one llhttp
        // call did): the end of a message whose last bytes were just read, and, after a refused
        // CONNECT, the resumption. `ByteToMessageHandler` calls `decode` only with bytes, so an end
        // left for later would wait for the client's next bytes.
        var none = ByteBuffer()
        while true {
            switch try nextEvent(&none) {
            case .end(let trailers): fireEnd(trailers, context: context)
            case .stopped(.tunnel) where resumesAfterTunnelHead: resume()
            default: return .continue
            }
        }
    }

    private func nextEvent(_ buffer: inout ByteBuffer) throws(Refusal) -> MessageDecoder.Event {
        do throws(HTTP1CodecError) {
            return try decoder.next(&buffer)
        } catch {
            throw Refusal(error: ProxyError(error))
        }
    }

    private func fireEnd(_ trailers: HTTP1Trailers?, context: ChannelHandlerContext) {
        context.fireChannelRead(wrapInboundOut(.end(trailers.map { HeaderFields($0.fieldList) })))
    }

    private func resume() {
        resumesAfterTunnelHead = false
        afterTunnelHead = false
        decoder.resume()
    }

    func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        guard seenEOF else {
            // Removal: a tunnel takes over, and what the codec did not parse is its first bytes.
            if buffer.readableBytes > 0 {
                context.fireChannelRead(NIOAny(buffer.readSlice(length: buffer.readableBytes)!))
            }
            return .needMoreData
        }
        // End of input while holding: the client is gone, nobody will be answered; parsing what
        // waits would only queue requests to drop them.
        if holding {
            buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
            return .needMoreData
        }
        while case .continue = try decode(context: context, buffer: &buffer) {}
        // Held meanwhile: what waits is dropped unjudged, as above.
        if !holding, decoder.inputEnded() == .truncated {
            throw Refusal(error: .malformed("the request could not be parsed (stream ended at an unexpected time)"))
        }
        return .needMoreData
    }
}

@available(*, unavailable)
extension ClientRequestReader: Sendable {}

extension ProxyError {
    /// The answer to bytes the codec refused (the table in `HTTP1CodecError`).
    init(_ error: HTTP1CodecError) {
        switch error.kind {
        case .malformedRequest: self = .malformed(error.reason)
        case .headersTooLarge: self.init(.headersTooLarge, error.reason)
        case .uriTooLong: self.init(.uriTooLong, error.reason)
        case .notImplemented: self.init(.notImplemented, error.reason)
        case .invalidResponse: self.init(.invalidResponse, error.reason)
        }
    }
}

/// What the client reader fires: a head (taken from the reader, `takeHead`), a slice of the body,
/// the end with its trailers.
enum ClientRequestEvent {
    case head
    case body(ByteBuffer)
    case end(HeaderFields?)
}
