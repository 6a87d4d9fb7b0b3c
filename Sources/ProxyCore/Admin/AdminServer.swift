import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// The admin listener (loopback by default): `/healthz` now; metrics and stats join it later.
public final class AdminServer: Service, Sendable {
    private let host: String
    private let port: Int
    private let group: any EventLoopGroup
    private let logger: Logger
    private let isDraining: @Sendable () -> Bool

    public init(host: String, port: Int, group: any EventLoopGroup, logger: Logger, isDraining: @escaping @Sendable () -> Bool) {
        self.host = host
        self.port = port
        self.group = group
        self.logger = logger
        self.isDraining = isDraining
    }

    public func run() async throws {
        let isDraining = self.isDraining
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(AdminHandler(isDraining: isDraining))
                }
            }
            .bind(host: host, port: port)
            .get()
        if let address = channel.localAddress {
            logger.info("admin listening", metadata: ["address": "\(ClientConnectionHandler.format(address))"])
        }
        try? await gracefulShutdown()
        try? await channel.close()
    }
}

final class AdminHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let isDraining: @Sendable () -> Bool
    private var head: HTTPRequestHead?

    init(isDraining: @escaping @Sendable () -> Bool) {
        self.isDraining = isDraining
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
            let (status, body): (HTTPResponseStatus, String)
            switch (head.method, path) {
            case (.GET, "/healthz"), (.HEAD, "/healthz"):
                (status, body) = isDraining() ? (.serviceUnavailable, "draining\n") : (.ok, "ok\n")
            case (_, "/healthz"):
                (status, body) = (.methodNotAllowed, "use GET\n")
            default:
                (status, body) = (.notFound, "not found: \(path.prefix(100)) (try /healthz)\n")
            }
            var buffer = context.channel.allocator.buffer(capacity: body.utf8.count)
            buffer.writeString(body)
            var response = HTTPResponseHead(version: head.version, status: status)
            response.headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            response.headers.add(name: "Content-Length", value: String(buffer.readableBytes))
            response.headers.add(name: "Cache-Control", value: "no-store")
            context.write(wrapOutboundOut(.head(response)), promise: nil)
            if head.method != .HEAD {
                context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            }
            let keepAlive = head.isKeepAlive
            context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                if !keepAlive { context.close(promise: nil) }
            }
        }
    }
}

@available(*, unavailable)
extension AdminHandler: Sendable {}
