import NIOCore
import NIOPosix

/// A loopback HTTP/1.1 server that answers every request with its own tag as the body, so a client
/// can tell which server it reached. A `CONNECT` is answered `200` and the connection stays open
/// for the request that follows inside the "tunnel" (answered by this server too): it stands in for
/// a proxy without forwarding anything anywhere. Requests carry no bodies.
package final class TaggingHTTPServer: TestServer {
    package let port: Int
    private let channel: any Channel
    private let seen: Guarded<[String]>

    private init(port: Int, channel: any Channel, seen: Guarded<[String]>) {
        self.port = port
        self.channel = channel
        self.seen = seen
    }

    package static func start(tag: String, host: String = "127.0.0.1", port: Int = 0) async throws -> TaggingHTTPServer {
        let seen = Guarded([String]())
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(TaggingHandler(tag: tag, seen: seen))
                }
            }
        let (channel, bound) = try await LoopbackListener.bind(bootstrap, host: host, port: port)
        return TaggingHTTPServer(port: bound, channel: channel, seen: seen)
    }

    /// The request lines received so far.
    package var requestLines: [String] { seen.withLock { $0 } }

    package var listeners: [any Channel] { [channel] }
}

private final class TaggingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let tag: String
    private let seen: Guarded<[String]>
    private var pending: [UInt8] = []

    init(tag: String, seen: Guarded<[String]>) {
        self.tag = tag
        self.seen = seen
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        pending += buffer.readBytes(length: buffer.readableBytes) ?? []
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        while let range = pending.firstRange(of: end) {
            let head = String(decoding: pending[..<range.lowerBound], as: UTF8.self)
            pending.removeSubrange(..<range.upperBound)
            let requestLine = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
            seen.withLock { $0.append(requestLine) }
            let answer = requestLine.hasPrefix("CONNECT ")
                ? "HTTP/1.1 200 Connection established\r\n\r\n"
                : "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(tag.utf8.count)\r\n\r\n\(tag)"
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: answer)), promise: nil)
        }
    }
}
