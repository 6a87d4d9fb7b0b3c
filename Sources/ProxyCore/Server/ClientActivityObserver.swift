import NIOCore

/// Sits in front of the HTTP decoder and reports the first raw bytes of a request, so the header
/// timeout runs from the moment a client starts a request rather than from when it went idle.
final class ClientActivityObserver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Fires once on the next read, then disarms until `arm` is called again.
    private var onBytes: (() -> Void)?
    /// A request started and its first line has not ended yet (its LF not seen).
    private var requestLineOpen = false
    /// Bytes of the current request's first line seen so far (all of it once its LF arrived): a
    /// head that overflows with a long request line is answered 414, not 431.
    private(set) var requestLineLength = 0

    func arm(_ callback: @escaping () -> Void) {
        onBytes = callback
    }

    func disarm() {
        onBytes = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let callback = onBytes {
            onBytes = nil
            requestLineOpen = true
            requestLineLength = 0
            callback()
        }
        if requestLineOpen {
            // Only until the first LF of a request: usually within the first read's first bytes.
            let view = unwrapInboundIn(data).readableBytesView
            if let lf = view.firstIndex(of: UInt8(ascii: "\n")) {
                requestLineOpen = false
                requestLineLength += lf - view.startIndex
            } else {
                requestLineLength += view.count
            }
        }
        context.fireChannelRead(data)
    }
}

@available(*, unavailable)
extension ClientActivityObserver: Sendable {}
