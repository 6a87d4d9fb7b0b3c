import NIOCore

/// Sits in front of the HTTP decoder. It reports the first raw bytes of a request, so the header
/// timeout runs from the moment a client starts a request rather than from when it went idle, and
/// it is the read-ahead gate for pipelined requests.
///
/// The gate: NIO's decoder parses every byte it is given, and one socket read event can bring up
/// to `maxMessagesPerRead` buffers at once. When the connection's queue of pipelined requests is
/// full (`hold`), the buffers that arrive next wait here, raw, and no further socket read is asked
/// for; `release` feeds them to the decoder once the queue has room. So a client that pipelines
/// thousands of requests is slowed down by TCP instead of refused: what the proxy holds is bounded
/// by one read event (the buffers of that event plus the requests parsed from one of them).
final class ClientActivityObserver: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = NIOAny

    /// Fires once on the next read, then disarms until `arm` is called again.
    private var onBytes: (() -> Void)?
    /// A request started and its first line has not ended yet (its LF not seen).
    private var requestLineOpen = false
    /// Bytes of the current request's first line seen so far (all of it once its LF arrived): a
    /// head that overflows with a long request line is answered 414, not 431.
    private(set) var requestLineLength = 0

    /// The decoder is not to be given more bytes for now.
    private var holding = false
    /// Raw buffers read while holding, in order.
    private var held = CircularBuffer<ByteBuffer>()
    /// A socket read was asked for while bytes were held.
    private var readPending = false
    /// A release is scheduled for the next event-loop turn.
    private var releaseScheduled = false
    private var context: ChannelHandlerContext?

    /// Raw bytes waiting for the decoder (for tests and `/stats`-style checks).
    var heldBytes: Int { held.reduce(0) { $0 + $1.readableBytes } }

    func arm(_ callback: @escaping () -> Void) {
        onBytes = callback
    }

    func disarm() {
        onBytes = nil
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // The tunnel switch releases everything first (`releaseNow`); this is a last resort.
        holding = false
        while let buffer = held.popFirst() {
            context.fireChannelRead(wrapInboundOut(buffer))
        }
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if holding || !held.isEmpty {
            held.append(unwrapInboundIn(data))
            return
        }
        forward(unwrapInboundIn(data), context: context)
    }

    func read(context: ChannelHandlerContext) {
        if holding || !held.isEmpty {
            readPending = true
            return
        }
        context.read()
    }

    private func forward(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        if let callback = onBytes {
            onBytes = nil
            requestLineOpen = true
            requestLineLength = 0
            callback()
        }
        if requestLineOpen {
            // Only until the first LF of a request: usually within the first read's first bytes.
            let view = buffer.readableBytesView
            if let lf = view.firstIndex(of: UInt8(ascii: "\n")) {
                requestLineOpen = false
                requestLineLength += lf - view.startIndex
            } else {
                requestLineLength += view.count
            }
        }
        context.fireChannelRead(wrapInboundOut(buffer))
    }

    // MARK: - the read-ahead gate

    /// The queue of pipelined requests is full: buffers that arrive from now on wait here.
    func hold() {
        holding = true
    }

    /// The queue has room again: the held buffers go to the decoder on the next event-loop turn
    /// (not from inside the handler that asked, which is in the middle of its own work).
    func release() {
        holding = false
        guard !held.isEmpty || readPending, !releaseScheduled, let context else { return }
        releaseScheduled = true
        context.eventLoop.assumeIsolated().execute { [self] in
            releaseScheduled = false
            guard let context = self.context else { return }
            feedHeld(context: context)
        }
    }

    /// Everything held goes to the decoder at once (before the HTTP handlers are removed for a
    /// tunnel: the decoder, which stopped parsing after the CONNECT or upgrade head, hands the
    /// bytes on as tunnel bytes).
    func releaseNow() {
        holding = false
        guard let context else { return }
        feedHeld(context: context)
    }

    private func feedHeld(context: ChannelHandlerContext) {
        guard !held.isEmpty else {
            takePendingRead(context: context)
            return
        }
        // One buffer at a time: the requests parsed from it may fill the queue again (`hold`).
        while !holding, let buffer = held.popFirst() {
            forward(buffer, context: context)
        }
        context.fireChannelReadComplete()
        takePendingRead(context: context)
    }

    /// A read swallowed while holding is asked for again from the tail of the pipeline, so the
    /// connection handler decides anew whether reading is allowed now.
    private func takePendingRead(context: ChannelHandlerContext) {
        guard readPending, !holding, held.isEmpty else { return }
        readPending = false
        context.channel.read()
    }
}

@available(*, unavailable)
extension ClientActivityObserver: Sendable {}
