import NIOCore

/// Sits in front of the HTTP decoder and reports the first raw bytes of a request, so the header
/// timeout runs from the moment a client starts a request rather than from when it went idle.
final class ClientActivityObserver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Fires once on the next read, then disarms until `arm` is called again.
    private var onBytes: (() -> Void)?

    func arm(_ callback: @escaping () -> Void) {
        onBytes = callback
    }

    func disarm() {
        onBytes = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let callback = onBytes {
            onBytes = nil
            callback()
        }
        context.fireChannelRead(data)
    }
}

@available(*, unavailable)
extension ClientActivityObserver: Sendable {}
