import NIOCore

/// One of a pair of handlers that splice two channels together (CONNECT tunnels and upgraded
/// connections). Each side reads only while its partner can take the writes (backpressure: no
/// unbounded buffer), forwards a half-close as a shutdown of the partner's output once the partner has
/// flushed what it was given, and closes the partner when it closes.
final class GlueHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum Side { case client, upstream }

    private var partner: GlueHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false
    private var inputClosed = false
    private var outputClosed = false
    private var closed = false
    let side: Side
    let recorder: TunnelRecorder

    private init(side: Side, recorder: TunnelRecorder) {
        self.side = side
        self.recorder = recorder
    }

    static func matchedPair(recorder: TunnelRecorder) -> (client: GlueHandler, upstream: GlueHandler) {
        let client = GlueHandler(side: .client, recorder: recorder)
        let upstream = GlueHandler(side: .upstream, recorder: recorder)
        client.partner = upstream
        upstream.partner = client
        return (client, upstream)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.partner = nil
    }

    // MARK: partner calls

    private func partnerWrite(_ data: NIOAny) {
        context?.write(data, promise: nil)
    }

    private func partnerFlush() {
        context?.flush()
    }

    /// The partner's peer finished sending: finish ours once everything queued is on the wire.
    private func partnerWriteEOF() {
        guard let context, !outputClosed else { return }
        outputClosed = true
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(ByteBuffer()), promise: promise)
        promise.futureResult.assumeIsolated().whenComplete { _ in
            guard let context = self.context else { return }
            if self.inputClosed {
                context.close(promise: nil)
            } else {
                context.close(mode: .output, promise: nil)
            }
        }
    }

    private func partnerCloseFull() {
        guard let context, !closed else { return }
        // Let what was already forwarded reach the peer before the close: `close` would discard
        // writes still queued behind a slow reader. The idle timeout bounds a peer that never reads.
        let flushed = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(ByteBuffer()), promise: flushed)
        flushed.futureResult.assumeIsolated().whenComplete { _ in
            self.context?.close(promise: nil)
        }
    }

    private func partnerBecameWritable() {
        if pendingRead, let context {
            pendingRead = false
            context.read()
        }
    }

    private var partnerWritable: Bool { context?.channel.isWritable ?? false }

    // MARK: ChannelHandler

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let count = unwrapInboundIn(data).readableBytes
        switch side {
        case .client: recorder.record.bytesUp += count
        case .upstream: recorder.record.bytesDown += count
        }
        partner?.partnerWrite(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.partnerFlush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        partner?.partnerCloseFull()
        recorder.sideClosed()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case ChannelEvent.inputClosed:
            inputClosed = true
            partner?.partnerWriteEOF()
            if outputClosed { context.close(promise: nil) }
        case let idle as IdleStateHandler.IdleStateEvent where idle == .all:
            if recorder.closeReason == nil { recorder.closeReason = "tunnel idle timeout" }
            context.close(promise: nil)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            partner?.partnerBecameWritable()
        }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if partner?.partnerWritable ?? false {
            context.read()
        } else {
            pendingRead = true
        }
    }
}

@available(*, unavailable)
extension GlueHandler: Sendable {}
