import NIOCore
import NIOHTTP1
import NIOPosix

/// A loopback origin that records the exact bytes each connection receives, for byte-level
/// assertions of what the proxy forwards. It parses what it received with NIO's request decoder
/// only to know when to answer:
/// - `.ok`: each complete request gets `HTTP/1.1 200 OK`, `Content-Length: 2`, `ok`;
/// - `.script`: each request head gets the next scripted raw response (shared by all
///   connections, in order); a step may close the connection after writing.
package final class WireOrigin: TestServer {
    package enum Step: Sendable {
        case send([UInt8])
        case sendAndClose([UInt8])
    }

    package enum Mode: Sendable {
        case ok
        case script([Step])
    }

    package struct State: Sendable {
        package var connections: [[UInt8]] = []
        package var closed = 0
        package var nextStep = 0
    }

    package let port: Int
    private let serverChannel: any Channel
    private let state: Guarded<State>

    private init(port: Int, serverChannel: any Channel, state: Guarded<State>) {
        self.port = port
        self.serverChannel = serverChannel
        self.state = state
    }

    package static func start(_ mode: Mode = .ok) async throws -> WireOrigin {
        let state = Guarded(State())
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                let index = state.withLock { state -> Int in
                    state.connections.append([])
                    return state.connections.count - 1
                }
                channel.closeFuture.whenComplete { _ in state.withLock { $0.closed += 1 } }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(Recorder(state: state, index: index))
                    try sync.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
                    try sync.addHandler(Responder(mode: mode, state: state))
                }
            }
        let (channel, port) = try await LoopbackListener.bind(bootstrap, host: "127.0.0.1", port: 0)
        return WireOrigin(port: port, serverChannel: channel, state: state)
    }

    deinit {
        stop()
    }

    package var listeners: [any Channel] { [serverChannel] }

    package var authority: String { "127.0.0.1:\(port)" }

    package var connectionCount: Int { state.withLock { $0.connections.count } }

    /// Bytes received on connection `index` (in accept order).
    package func received(_ index: Int) -> [UInt8] {
        state.withLock { $0.connections.indices.contains(index) ? $0.connections[index] : [] }
    }

    /// Every byte received, connections in accept order.
    package var allReceived: [UInt8] { state.withLock { $0.connections.flatMap { $0 } } }

    /// Waits until `count` bytes in all have arrived (or the timeout passes); returns them.
    package func waitForBytes(_ count: Int, timeout: Duration = .seconds(10)) async -> [UInt8] {
        await state.first(within: timeout) { state -> [UInt8]? in
            let all = state.connections.flatMap { $0 }
            return all.count >= count ? all : nil
        } ?? allReceived
    }

    /// Waits until `count` connections were closed.
    package func waitForClosed(_ count: Int, timeout: Duration = .seconds(10)) async -> Bool {
        await state.first(within: timeout) { $0.closed >= count ? true : nil } ?? false
    }

    private final class Recorder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        let state: Guarded<State>
        let index: Int

        init(state: Guarded<State>, index: Int) {
            self.state = state
            self.index = index
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = Array(unwrapInboundIn(data).readableBytesView)
            state.withLock { $0.connections[index].append(contentsOf: bytes) }
            context.fireChannelRead(data)
        }
    }

    private final class Responder: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = ByteBuffer
        let mode: Mode
        let state: Guarded<State>

        init(mode: Mode, state: Guarded<State>) {
            self.mode = mode
            self.state = state
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch (mode, unwrapInboundIn(data)) {
            case (.ok, .end):
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")), promise: nil)
            case (.script(let steps), .head):
                let step = state.withLock { state -> Step? in
                    defer { state.nextStep += 1 }
                    return steps.indices.contains(state.nextStep) ? steps[state.nextStep] : nil
                }
                switch step {
                case .send(let bytes):
                    context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: bytes)), promise: nil)
                case .sendAndClose(let bytes):
                    context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: bytes))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
                case nil:
                    context.close(promise: nil)
                }
            default:
                break
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
