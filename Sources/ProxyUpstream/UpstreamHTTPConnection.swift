import HTTP1Codec
import NIOCore
import NIOHTTP1
import ProxyHTTP

/// Receives what one upstream HTTP connection produces while it serves an exchange.
package protocol UpstreamHTTPDelegate: AnyObject {
    func upstream(_ connection: UpstreamHTTPConnection, received part: UpstreamResponsePart)
    func upstreamReadComplete(_ connection: UpstreamHTTPConnection)
    func upstreamWritabilityChanged(_ connection: UpstreamHTTPConnection)
    func upstreamClosed(_ connection: UpstreamHTTPConnection, error: (any Error)?)
}

/// Identifies interchangeable upstream connections: the host asked for (the name a TLS certificate
/// was verified against), the port dialed, and whether the connection is TLS.
package struct PoolKey: Hashable {
    package var host: String
    package var port: Int
    package var tls: Bool
    /// The parent proxy the connection goes through (`host:port`); nil: direct. A connection made
    /// one way is never reused for the other after a reload changed the route.
    package var parent: String?

    package init(host: String, port: Int, tls: Bool, parent: String? = nil) {
        self.host = host
        self.port = port
        self.tls = tls
        self.parent = parent
    }
}

/// The last handler of an upstream HTTP/1.1 channel. It belongs to the pool while idle and to one
/// client exchange while busy; reads are gated by the client's writability (backpressure).
package final class UpstreamHTTPConnection: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = UpstreamResponseEvent
    package typealias OutboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    let key: PoolKey
    /// Creation order across the process: a purge retires every connection created before it.
    let serial: UInt64 = UpstreamHTTPConnection.nextSerial()
    /// The decoder in front of this handler: told when a request goes out.
    let responseDecoder: UpstreamResponseReader
    /// Serializes requests into bytes (no HTTP encoder on the pipeline).
    private var requestWriter = HTTPMessageWriter()
    private(set) var context: ChannelHandlerContext?
    private(set) weak var delegate: (any UpstreamHTTPDelegate)?
    /// The pool holding this connection while it is idle.
    weak var pool: UpstreamPool?
    /// When the connection last went idle in the pool.
    package var idleSince = NIODeadline.uptimeNanoseconds(0)
    /// Until when the pool may reuse it without asking the resolver (set when it is dialed).
    package var lease = ConnectionLease.unlimited

    /// Ownership, read gating and deferred release, as a value; this class only does I/O.
    private var machine = UpstreamConnectionStateMachine()
    package var dialedAddress: SocketAddress? {
        didSet { dialedIP = dialedAddress?.ipAddress }
    }
    /// `dialedAddress` as text, made once: every reuse from the pool logs it.
    package private(set) var dialedIP: String?
    /// Set when the connection goes to the parent proxy itself: every request on it is sent in
    /// absolute form naming this authority.
    package var parentForward: ParentForward?
    /// False for a connection the pool must not keep (made while the parent proxy was down).
    package var reusable = true
    /// The HTTP decoder handler in front of this one, removed by reference after an upgrade.
    package var decoderHandler: ByteToMessageHandler<UpstreamResponseReader>?

    package init(key: PoolKey, responseDecoder: UpstreamResponseReader = UpstreamResponseReader()) {
        self.key = key
        self.responseDecoder = responseDecoder
    }

    package var channel: (any Channel)? { context?.channel }
    package var isWritable: Bool { context?.channel.isWritable ?? false }
    package var isClosed: Bool { machine.isClosed }
    package var isUsable: Bool { !machine.isClosed && (context?.channel.isActive ?? false) }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: writes from the exchange

    /// A request head already written as bytes: the response it asks for may come, and the body
    /// that follows is framed as `chunked` says.
    package func writeHead(_ bytes: ByteBuffer, method: MethodKind, upgradeRequested: Bool, chunked: Bool) {
        guard let context else { return }
        responseDecoder.requestSent(method: method, upgradeRequested: upgradeRequested)
        requestWriter.headWritten(chunked: chunked)
        context.write(wrapOutboundOut(bytes), promise: nil)
    }

    package func write(_ part: HTTPClientRequestPart) {
        guard let context else { return }
        let allocator = context.channel.allocator
        switch part {
        case .head(let head):
            responseDecoder.requestSent(head)
            context.write(wrapOutboundOut(requestWriter.head(head, allocator: allocator)), promise: nil)
        case .body(.byteBuffer(let buffer)):
            requestWriter.body(buffer, allocator: allocator) { context.write(wrapOutboundOut($0), promise: nil) }
        case .body(.fileRegion):
            preconditionFailure("the proxy never writes file regions")
        case .end(let trailers):
            if let bytes = requestWriter.end(trailers, allocator: allocator) {
                context.write(wrapOutboundOut(bytes), promise: nil)
            }
        }
    }

    package func flush() {
        context?.flush()
    }

    package func setReadAllowed(_ allowed: Bool) {
        if machine.setReadsAllowed(allowed), let context { context.read() }
    }

    /// An exchange takes this connection: what it reads goes to `delegate`. Returns false when
    /// the channel closed before (an origin that closed a fresh connection at once): no close
    /// event will come, the caller must treat it as closed.
    package func attach(to delegate: any UpstreamHTTPDelegate) -> Bool {
        guard machine.attached() else { return false }
        self.delegate = delegate
        return true
    }

    /// The first error the channel reported before it closed.
    package var closeError: (any Error)? { machine.closeError }

    /// The exchange lets go without a release (it closes the connection, or the pool takes it).
    package func detach() {
        delegate = nil
        machine.detached()
    }

    package func close() {
        machine.closing()
        guard let context, !machine.isClosed else { return }
        context.close(promise: nil)
    }

    /// The exchange is over and the response ended cleanly: back to `pool` for reuse, at once or,
    /// inside a read, when the read is over.
    package func release(to pool: UpstreamPool) {
        delegate = nil
        if machine.released(to: pool) { pool.put(self) }
    }

    /// Stop interpreting inbound data: everything from now on is raw tunnel bytes kept for the glue.
    /// `expectingEnd`: the decoder still owes the `.end` of the 101 response, which is dropped.
    package func startCollecting(expectingEnd: Bool) {
        delegate = nil
        machine.startCollecting(expectingEnd: expectingEnd)
    }

    package func takeCollected() -> [NIOAny] {
        machine.takeCollected()
    }

    // MARK: ChannelHandler

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Tunnel bytes after an accepted upgrade's 101 are kept as they are.
        if machine.rawBytes(data) { return }
        let part: UpstreamResponsePart
        switch unwrapInboundIn(data) {
        case .head:
            guard let head = responseDecoder.takeHead() else {
                context.close(promise: nil)
                return
            }
            part = .head(head)
        case .body(let buffer): part = .body(buffer)
        case .end(let trailers): part = .end(trailers)
        }
        switch machine.responsePart(part) {
        case .deliver:
            guard let delegate else {
                // The exchange is gone without letting go: nobody can take these bytes.
                context.close(promise: nil)
                return
            }
            delegate.upstream(self, received: part)
        case .keep:
            break
        case .close:
            // An idle pooled connection must not receive anything: the origin broke framing.
            context.close(promise: nil)
        }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        if case .release(let pool) = machine.readComplete() {
            if isUsable { pool.put(self) } else { context.close(promise: nil) }
        }
        delegate?.upstreamReadComplete(self)
    }

    package func channelWritabilityChanged(context: ChannelHandlerContext) {
        delegate?.upstreamWritabilityChanged(self)
        context.fireChannelWritabilityChanged()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        let delegate = self.delegate
        self.delegate = nil
        if machine.channelClosed(), let delegate {
            delegate.upstreamClosed(self, error: machine.closeError)
        } else {
            pool?.remove(self)
        }
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        machine.errorCaught(error)
        context.close(promise: nil)
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            // The origin finished sending; the decoder has already delivered the end of a
            // close-delimited body. Nothing more can be sent on this connection.
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    package func read(context: ChannelHandlerContext) {
        if machine.readRequested() { context.read() }
    }
}

@available(*, unavailable)
extension UpstreamHTTPConnection: Sendable {}
