import NIOCore
import NIOPosix

/// Raw TCP echo server on a loopback address and an ephemeral port.
///
/// Half-close aware: when a client shuts down its write side, the server finishes echoing what it
/// received, then shuts down its own output (and closes the connection).
final class TCPEchoServer: Sendable {
    let host: String
    let port: Int

    private let serverChannel: Channel
    private let counters = Guarded(Counters())
    private let children = Guarded([Channel]())

    struct Counters: Sendable {
        var connections = 0
        var inputClosed = 0
        var bytesEchoed = 0
    }

    init(host: String = "127.0.0.1") throws {
        self.host = host
        let counters = self.counters
        let children = self.children
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                counters.withLock { $0.connections += 1 }
                children.withLock { $0.append(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(EchoHandler(counters: counters))
                }
            }
        let channel = try bootstrap.bind(host: host, port: 0).wait()
        self.serverChannel = channel
        guard let port = channel.localAddress?.port else {
            channel.close(promise: nil)
            throw TestOriginError.noPort
        }
        self.port = port
    }

    deinit {
        stop()
    }

    /// "127.0.0.1:PORT", or "[::1]:PORT" for IPv6.
    var authority: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// TCP connections accepted so far.
    var connectionCount: Int { counters.withLock { $0.connections } }

    /// Connections whose client side sent EOF (half-close) so far.
    var inputClosedCount: Int { counters.withLock { $0.inputClosed } }

    /// Total bytes echoed back so far.
    var bytesEchoed: Int { counters.withLock { $0.bytesEchoed } }

    /// Waits until at least `count` connections have seen EOF from their client; false on timeout.
    func waitForInputClosed(count: Int = 1, timeout: Duration = .seconds(10)) -> Bool {
        counters.wait(timeout: timeout) { $0.inputClosed >= count ? true : nil } ?? false
    }

    func stop() {
        serverChannel.close(promise: nil)
        for child in children.withLock({ $0 }) {
            child.close(promise: nil)
        }
    }

    private final class EchoHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private let counters: Guarded<Counters>
        private var lastWrite: EventLoopFuture<Void>?

        init(counters: Guarded<Counters>) {
            self.counters = counters
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            counters.withLock { $0.bytesEchoed += buffer.readableBytes }
            let promise = context.eventLoop.makePromise(of: Void.self)
            context.write(wrapOutboundOut(buffer), promise: promise)
            lastWrite = promise.futureResult
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            context.flush()
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            guard let event = event as? ChannelEvent, event == .inputClosed else {
                context.fireUserInboundEventTriggered(event)
                return
            }
            counters.withLock { $0.inputClosed += 1 }
            context.flush()
            let channel = context.channel
            let finishOutput: @Sendable () -> Void = {
                channel.close(mode: .output).whenComplete { _ in channel.close(promise: nil) }
            }
            if let lastWrite {
                lastWrite.whenComplete { _ in finishOutput() }
            } else {
                finishOutput()
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: Error) {
            context.close(promise: nil)
        }
    }
}
