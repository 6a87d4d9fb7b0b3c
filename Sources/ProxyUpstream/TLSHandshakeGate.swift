import NIOCore
import OpenSSLTLS

/// Sits right after `OpenSSLHandler` and tells the connector how the handshake ended, so that
/// a connection is handed out only once the origin is verified (a certificate failure is known
/// before any request byte is sent, and counts as that address failing). A pass-through afterwards.
///
/// The outcome is kept until asked for: Happy Eyeballs may open channels that are never handed out,
/// and those must not leave a promise behind.
final class TLSHandshakeGate: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private enum State {
        case pending
        case completed(UpstreamTLSHandshake)
        case failed(any Error)
    }

    private var state = State.pending
    private var promise: EventLoopPromise<UpstreamTLSHandshake>?
    private var activeSince: NIODeadline?
    /// The address this channel connected to (kept: it is needed after a failure closed the channel).
    private(set) var remoteAddress: SocketAddress?

    private let serverName: String

    init(serverName: String) {
        self.serverName = serverName
    }

    /// Completes when the handshake does; fails with the `TLSError` (or I/O error) that ended it.
    func handshakeResult(on eventLoop: any EventLoop) -> EventLoopFuture<UpstreamTLSHandshake> {
        switch state {
        case .completed(let handshake):
            return eventLoop.makeSucceededFuture(handshake)
        case .failed(let error):
            return eventLoop.makeFailedFuture(error)
        case .pending:
            if let promise { return promise.futureResult }
            let promise = eventLoop.makePromise(of: UpstreamTLSHandshake.self)
            self.promise = promise
            return promise.futureResult
        }
    }

    private func finish(_ result: Result<UpstreamTLSHandshake, any Error>) {
        guard case .pending = state else { return }
        switch result {
        case .success(let handshake): state = .completed(handshake)
        case .failure(let error): state = .failed(error)
        }
        if let promise {
            self.promise = nil
            promise.completeWith(result)
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { noteActive(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish(.failure(ChannelError.ioOnClosedChannel))
    }

    func channelActive(context: ChannelHandlerContext) {
        noteActive(context: context)
        context.fireChannelActive()
    }

    private func noteActive(context: ChannelHandlerContext) {
        if activeSince == nil { activeSince = .now() }
        if remoteAddress == nil { remoteAddress = context.channel.remoteAddress }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiatedProtocol, let resumed, let version) = event as? TLSClientEvent {
            finish(
                .success(
                    UpstreamTLSHandshake(
                        resumed: resumed,
                        version: version,
                        negotiatedProtocol: negotiatedProtocol,
                        duration: NIODeadline.now() - (activeSince ?? .now())
                    )
                )
            )
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(TLSError.closedDuringHandshake(host: serverName)))
        context.fireChannelInactive()
    }
}

@available(*, unavailable)
extension TLSHandshakeGate: Sendable {}
