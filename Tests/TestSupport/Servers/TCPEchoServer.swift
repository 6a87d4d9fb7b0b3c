import NIOCore
import NIOPosix

/// Raw TCP echo server on a loopback address and an ephemeral port.
///
/// Half-close aware: when a client shuts down its write side, the server finishes echoing what it
/// received, then shuts down its own output (and closes the connection).
package final class TCPEchoServer: TestServer {
    package let host: String
    package let port: Int

    private let serverChannel: any Channel
    private let counters: Guarded<Counters>
    private let children: Guarded<[any Channel]>

    package struct Counters: Sendable {
        package var connections = 0
        package var inputClosed = 0
        package var bytesEchoed = 0
    }

    private init(host: String, port: Int, serverChannel: any Channel, counters: Guarded<Counters>, children: Guarded<[any Channel]>) {
        self.host = host
        self.port = port
        self.serverChannel = serverChannel
        self.counters = counters
        self.children = children
    }

    package static func start(host: String = "127.0.0.1") async throws -> TCPEchoServer {
        let counters = Guarded(Counters())
        let children = Guarded([any Channel]())
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                counters.withLock { $0.connections += 1 }
                children.withLock { $0.append(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(EchoHandler(counters: counters))
                }
            }
        let (channel, port) = try await LoopbackListener.bind(bootstrap, host: host, port: 0)
        return TCPEchoServer(host: host, port: port, serverChannel: channel, counters: counters, children: children)
    }

    deinit {
        stop()
    }

    package var listeners: [any Channel] { [serverChannel] }
    package var accepted: [any Channel] { children.withLock { $0 } }

    /// "127.0.0.1:PORT", or "[::1]:PORT" for IPv6.
    package var authority: String {
        LoopbackListener.authority(host: host, port: port)
    }

    /// TCP connections accepted so far.
    package var connectionCount: Int { counters.withLock { $0.connections } }

    /// Connections whose client side sent EOF (half-close) so far.
    package var inputClosedCount: Int { counters.withLock { $0.inputClosed } }

    /// Total bytes echoed back so far.
    package var bytesEchoed: Int { counters.withLock { $0.bytesEchoed } }

    /// Waits until at least `count` connections have seen EOF from their client; false on timeout.
    package func waitForInputClosed(count: Int = 1, timeout: Duration = .seconds(10)) async -> Bool {
        await counters.first(within: timeout) { $0.inputClosed >= count ? true : nil } ?? false
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
