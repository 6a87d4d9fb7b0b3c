import NIOCore
import NIOHTTP1
import ProxyHTTP
import ProxyUpstream

/// Turns a client connection that spoke HTTP (and, after an upgrade, its upstream connection)
/// into the two ends of a byte tunnel: the HTTP codecs go, a `GlueHandler` pair joins the
/// channels, and the bytes that arrived during the switch are replayed on each side — client
/// bytes towards the origin, upstream bytes towards the client. Upstream bytes are handed to the
/// upstream glue directly: replayed from the head of the upstream pipeline they would pass through
/// `OpenSSLHandler` again, as if they were ciphertext.
package struct TunnelSwitch {
    /// The client channel's HTTP decoder, removed by reference (responses are serialized by
    /// `ClientConnectionHandler` itself).
    struct ClientCodec {
        var decoder: ByteToMessageHandler<ClientRequestReader>
        /// On a transparent connection: turns origin-form requests into absolute-form ones.
        var transparentTargets: TransparentRequestTargetHandler? = nil
    }

    /// Reads grow from 2 KiB up to 512 KiB while they keep filling the buffer. NIO pools up to
    /// `readsPerTurn` receive buffers per channel and never shrinks them, so these two bound what a
    /// tunnel keeps after a bulk transfer (1 MiB per side at most). Measured on the 1 GiB tunnel
    /// benchmark: 512 KiB × 2 moves as fast as 1 MiB × 4, 256 KiB and below are slower, and a
    /// flush per read is slower still.
    static let readAllocator = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 512 * 1024)
    static let readsPerTurn: UInt = 2

    /// Removes the HTTP decoders: the client's, and the upstream's (after an upgrade).
    static func removeHTTPHandlers(
        client: ChannelPipeline.SynchronousOperations,
        codec: ClientCodec,
        upstream: UpstreamHTTPConnection?,
        on eventLoop: any EventLoop
    ) -> EventLoopFuture<Void> {
        // The request-target handler goes first: the decoder hands its leftover bytes on when it
        // is removed, and they are tunnel bytes, not request parts.
        var removals = codec.transparentTargets.map { [client.removeHandler($0)] } ?? []
        removals.append(client.removeHandler(codec.decoder))
        if let upstream, let decoder = upstream.decoderHandler, let channel = upstream.channel {
            removals.append(channel.pipeline.syncOperations.removeHandler(decoder))
        }
        return EventLoopFuture.andAllSucceed(removals, on: eventLoop)
    }

    /// Installs the glue on both channels (the client's after `clientHandlerContext`) and replays
    /// what arrived during the switch. Both channels read again afterwards.
    package static func install(
        clientHandlerContext context: ChannelHandlerContext,
        upstream: any Channel,
        clientBytes: [NIOAny],
        upstreamBytes: [NIOAny],
        recorder: TunnelRecorder,
        idleTimeout: TimeAmount
    ) throws {
        let (clientGlue, upstreamGlue) = GlueHandler.matchedPair(recorder: recorder)
        _ = context.channel.setOption(ChannelOptions.allowRemoteHalfClosure, value: true)
        _ = upstream.setOption(ChannelOptions.allowRemoteHalfClosure, value: true)
        // Bulk transfers through a tunnel want large reads (fewer syscalls per byte); the adaptive
        // allocator only grows a channel's buffer while reads keep filling it, so an idle or
        // interactive tunnel stays small. Fewer reads per event-loop turn bound what one burst can
        // queue on the partner before its writability is checked again.
        for channel in [context.channel, upstream] {
            _ = channel.setOption(ChannelOptions.recvAllocator, value: readAllocator)
            _ = channel.setOption(ChannelOptions.maxMessagesPerRead, value: readsPerTurn)
        }
        try context.pipeline.syncOperations.addHandler(IdleStateHandler(allTimeout: idleTimeout), position: .after(context.handler))
        try context.pipeline.syncOperations.addHandler(clientGlue, position: .last)
        try upstream.pipeline.syncOperations.addHandler(upstreamGlue)

        if !upstreamBytes.isEmpty {
            let glueContext = try upstream.pipeline.syncOperations.context(handler: upstreamGlue)
            for data in upstreamBytes {
                upstreamGlue.channelRead(context: glueContext, data: data)
            }
            upstreamGlue.channelReadComplete(context: glueContext)
        }
        for data in clientBytes {
            context.fireChannelRead(data)
        }
        if !clientBytes.isEmpty { context.fireChannelReadComplete() }
    }
}
