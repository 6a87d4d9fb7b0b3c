// The floor under any SwiftNIO forward path (bench/bench pinned's `nio-relay` target): one upstream
// connection per client, bytes in and bytes out, nothing parsed. It makes the same system calls
// per kept-alive request as the proxy (two reads, two writes, two epoll_waits), so the CPU it
// spends per request is what the event loop, the channel pipeline and the kernel cost before
// any HTTP work; what the proxy spends above it is its own.
//
// With --http, each side also runs NIO's HTTP/1 codec (an llhttp decoder and NIO's encoder, two
// handlers per side, nothing else) and the parts are handed across unchanged: the floor under a
// proxy that parses and re-serializes with NIOHTTP1 but does nothing else (no rewriting, no state
// machine, no records). The proxy serializes with its own writer instead of NIO's encoders, so
// this floor holds NIO's encoders where the proxy has its writer.
//
// With --bytes, each side is one handler that scans heads itself and copies the kept bytes
// (ByteRelay.swift): the floor under the own-parser design.
//
//   nio-floor [--http|--bytes] LISTEN_PORT ORIGIN_PORT      (127.0.0.1 only; one event-loop thread)
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Writes what one side reads to the other side, flushing once per read cycle. Both sides of a
/// pair live on the client channel's event loop (the origin connection is made on it), which is
/// what makes the unchecked Sendable true.
final class Relay: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    var partner: Relay?
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.context?.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.context?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
    }
}

/// The --http relay: request parts from the client side go out through the origin side's request
/// encoder; response parts come back through the client side's response encoder.
final class PartRelay<In, Out>: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = In
    typealias OutboundIn = Out
    typealias OutboundOut = Out

    var forward: ((In) -> Void)?
    var flushPartner: (() -> Void)?
    var closePartner: (() -> Void)?
    var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        forward = nil
        flushPartner = nil
        closePartner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        forward?(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) { flushPartner?() }

    func channelInactive(context: ChannelHandlerContext) { closePartner?() }

    func send(_ part: Out) {
        context?.write(wrapOutboundOut(part), promise: nil)
    }
}

typealias ClientSide = PartRelay<HTTPServerRequestPart, HTTPServerResponsePart>
typealias OriginSide = PartRelay<HTTPClientResponsePart, HTTPClientRequestPart>

func pair(_ client: ClientSide, _ origin: OriginSide) {
    client.forward = { [unowned origin] part in
        switch part {
        case .head(let head): origin.send(.head(head))
        case .body(let buffer): origin.send(.body(.byteBuffer(buffer)))
        case .end(let trailers): origin.send(.end(trailers))
        }
    }
    origin.forward = { [unowned client] part in
        switch part {
        case .head(let head): client.send(.head(head))
        case .body(let buffer): client.send(.body(.byteBuffer(buffer)))
        case .end(let trailers): client.send(.end(trailers))
        }
    }
    client.flushPartner = { [unowned origin] in origin.context?.flush() }
    origin.flushPartner = { [unowned client] in client.context?.flush() }
    client.closePartner = { [unowned origin] in origin.context?.close(promise: nil) }
    origin.closePartner = { [unowned client] in client.context?.close(promise: nil) }
}

/// Connects to the origin (127.0.0.1:`originPort`) on the client's event loop with `originSide` as its only handler, then
/// adds `clientSide` to the client channel.
func connectPair(
    _ client: any Channel,
    clientSide: some ChannelHandler & Sendable,
    originSide: some ChannelHandler & Sendable,
    originPort: Int
) -> EventLoopFuture<Void> {
    ClientBootstrap(group: client.eventLoop)
        .channelOption(.socketOption(.tcp_nodelay), value: 1)
        .channelInitializer { origin in
            origin.eventLoop.makeCompletedFuture { try origin.pipeline.syncOperations.addHandler(originSide) }
        }
        .connect(host: "127.0.0.1", port: originPort)
        .flatMapThrowing { _ in try client.pipeline.syncOperations.addHandler(clientSide) }
}

var arguments = Array(CommandLine.arguments.dropFirst())
let http = arguments.first == "--http"
let bytes = arguments.first == "--bytes"
if http || bytes { arguments.removeFirst() }
guard arguments.count == 2, let listenPort = Int(arguments[0]), let originPort = Int(arguments[1]) else {
    print("usage: nio-floor [--http|--bytes] LISTEN_PORT ORIGIN_PORT")
    exit(2)
}
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let server = try ServerBootstrap(group: group)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { client in
        client.eventLoop.makeCompletedFuture { () -> EventLoopFuture<Void> in
            if http {
                let clientSide = ClientSide()
                let originSide = OriginSide()
                pair(clientSide, originSide)
                return ClientBootstrap(group: client.eventLoop)
                    .channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .channelInitializer { origin in
                        origin.eventLoop.makeCompletedFuture {
                            let sync = origin.pipeline.syncOperations
                            try sync.addHandler(HTTPRequestEncoder())
                            try sync.addHandler(ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .forwardBytes)))
                            try sync.addHandler(originSide)
                        }
                    }
                    .connect(host: "127.0.0.1", port: originPort)
                    .flatMapThrowing { _ in
                        // The same two handlers as the origin side, and nothing else (no header
                        // validator, no pipelining or error handler).
                        let sync = client.pipeline.syncOperations
                        try sync.addHandler(HTTPResponseEncoder())
                        try sync.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes)))
                        try sync.addHandler(clientSide)
                    }
            }
            if bytes {
                let clientSide = ByteSide(clientSide: true)
                let originSide = ByteSide(clientSide: false)
                clientSide.partner = originSide
                originSide.partner = clientSide
                return connectPair(client, clientSide: clientSide, originSide: originSide, originPort: originPort)
            }
            let clientSide = Relay()
            let originSide = Relay()
            clientSide.partner = originSide
            originSide.partner = clientSide
            return connectPair(client, clientSide: clientSide, originSide: originSide, originPort: originPort)
        }.flatMap { $0 }
    }
    .bind(host: "127.0.0.1", port: listenPort)
    .wait()
try server.closeFuture.wait()
