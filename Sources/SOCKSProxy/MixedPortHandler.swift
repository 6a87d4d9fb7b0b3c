import ForwardProxy
import NIOCore
import ProxyAccess
import ProxyKit

/// The first handler of a connection to the proxy's listener when it also serves SOCKS
/// (`listen-socks`): waits for the first byte, then installs the HTTP pipeline or the SOCKS
/// handler (as `MixedPort.route` says), hands it the bytes read so far and leaves. Nothing is read
/// ahead: the one read that carried the first byte is all it holds.
package final class MixedPortHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer

    private let env: ProxyEnvironment
    private let admission: ClientAdmission.Verdict
    private var timer: Scheduled<Void>?
    private var decided = false

    package init(env: ProxyEnvironment, admission: ClientAdmission.Verdict) {
        self.env = env
        self.admission = admission
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context: context) }
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    package func channelActive(context: ChannelHandlerContext) {
        arm(context: context)
        context.fireChannelActive()
    }

    private func arm(context: ChannelHandlerContext) {
        guard timer == nil, !decided else { return }
        let configuration = env.configuration
        let wait = MixedPort.waitForFirstByte(
            admission: admission, clientIdleTimeout: configuration.clientIdleTimeout, headerTimeout: configuration.headerTimeout
        )
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: wait) { [weak self] in
            guard let self, !self.decided else { return }
            self.decided = true
            switch MixedPort.silence(admission: self.admission) {
            case .close:
                context.close(promise: nil)
            case .answerHTTP(let verdict):
                self.hand(to: .http(verdict), held: nil, context: context)
            }
        }
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !decided else {
            context.fireChannelRead(data)
            return
        }
        let bytes = unwrapInboundIn(data)
        guard let first = bytes.readableBytesView.first else { return }
        decided = true
        timer?.cancel()
        timer = nil
        hand(to: MixedPort.route(firstByte: first, admission: admission), held: bytes, context: context)
    }

    /// Shutting down: a connection that has not said anything yet has nothing in flight.
    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, !decided {
            decided = true
            timer?.cancel()
            timer = nil
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        decided = true
        context.fireChannelInactive()
    }

    private func hand(to route: MixedPort.Route, held: ByteBuffer?, context: ChannelHandlerContext) {
        let channel = context.channel
        do {
            switch route {
            case .http(let verdict):
                try ClientPipeline.configure(channel, env: env, admission: verdict)
            case .socks(let verdict):
                // The SOCKS handler reads only when its handshake wants bytes.
                try channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
                try channel.pipeline.syncOperations.addHandler(SOCKSConnectionHandler(env: env, admission: verdict))
            }
        } catch {
            context.close(promise: nil)
            return
        }
        if let held {
            context.fireChannelRead(NIOAny(held))
            context.fireChannelReadComplete()
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}

@available(*, unavailable)
extension MixedPortHandler: Sendable {}
