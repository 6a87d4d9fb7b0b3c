import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A loopback HTTP/1.1 server whose answers come from one closure (nil: never answer).
enum FakeHTTPServer {
    typealias Respond = @Sendable (FakeHTTPDNSService.SeenRequest) -> (Int, String, [UInt8])?

    /// `onConnection`: told of every accepted connection (fakes that count them).
    static func start(
        host: String, port: Int, onConnection: (@Sendable () -> Void)? = nil, respond: @escaping Respond
    ) async throws -> (channel: any Channel, port: Int) {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                onConnection?()
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(ClosureHTTPHandler(respond: respond))
                }
            }
        return try await LoopbackListener.bind(bootstrap, host: host, port: port)
    }
}

final class ClosureHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let respond: FakeHTTPServer.Respond
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(respond: @escaping FakeHTTPServer.Respond) {
        self.respond = respond
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(var buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let head else { return }
            self.head = nil
            let components = URLComponents(string: head.uri)
            var query: [String: String] = [:]
            for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
            let request = FakeHTTPDNSService.SeenRequest(
                method: head.method.rawValue, uri: head.uri, path: components?.path ?? head.uri, query: query,
                headers: head.headers.map { ($0.name, $0.value) }, body: body
            )
            guard let (status, contentType, bytes) = respond(request) else { return }
            var response = HTTPResponseHead(version: head.version, status: HTTPResponseStatus(statusCode: status))
            response.headers.add(name: "Content-Type", value: contentType)
            response.headers.add(name: "Content-Length", value: String(bytes.count))
            context.write(wrapOutboundOut(.head(response)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}

@available(*, unavailable)
extension ClosureHTTPHandler: Sendable {}
