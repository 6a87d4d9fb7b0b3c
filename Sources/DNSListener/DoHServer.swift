import HTTPDNS
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ProxyConfig
import ProxyKit
import ProxyUpstream
import ServiceLifecycle

/// The DoH listener (`--doh-listen`): RFC 8484 `GET/POST /dns-query` and the JSON
/// `GET /resolve?name=&type=` answered by the DNS listener's responder (same cache, ACL, rate limit
/// and metrics), so a per-pod proxy can use `--provider doh` or `json` against a node's proxy.
package final class DoHServer: Service, Sendable {
    let listen: HostPort
    let group: any EventLoopGroup
    let responder: DNSResponder
    let token: String?
    let requestTimeout: TimeAmount
    let logger: Logger
    let ownListeners: OwnListeners?

    /// `token`: the bearer token every request must carry (nil: none). `requestTimeout`: a
    /// connection without a complete request for this long is closed.
    package init(
        listen: HostPort, token: String?, requestTimeout: TimeAmount, group: any EventLoopGroup, responder: DNSResponder, logger: Logger,
        ownListeners: OwnListeners? = nil
    ) {
        self.listen = listen
        self.group = group
        self.token = token
        self.requestTimeout = requestTimeout
        self.logger = logger
        self.ownListeners = ownListeners
        self.responder = responder
    }

    package func run() async throws {
        let responder = self.responder
        let token = self.token
        let requestTimeout = self.requestTimeout
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .pausingAcceptOnShortage("doh", logger: logger)
                .childChannelInitializer { channel in
                    guard responder.isAllowed(channel.remoteAddress) else { return channel.close() }
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: requestTimeout))
                        try channel.pipeline.syncOperations.addHandler(DoHHandler(responder: responder, token: token))
                    }
                }
                .bind(host: listen.host, port: listen.port).get()
        } catch {
            throw ListenerBindError(listener: "doh", option: "--doh-listen", host: listen.host, port: listen.port, error: error)
        }
        if let address = channel.localAddress {
            ownListeners?.add(address)
            logger.info("doh listening", metadata: ["address": "\(address.endpointText)", "token": "\(token == nil ? "off" : "on")"])
        }
        try? await gracefulShutdown()
        try? await channel.close()
    }
}

/// One request at a time: head and body (at most `DoHRequest.maximumBody` bytes) in, one response out.
final class DoHHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let responder: DNSResponder
    let token: String?
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLong = false

    init(responder: DNSResponder, token: String?) {
        self.responder = responder
        self.token = token
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
            tooLong = false
        case .body(let buffer):
            if body.count + buffer.readableBytes > DoHRequest.maximumBody {
                tooLong = true
            } else {
                body += buffer.readableBytesView
            }
        case .end:
            guard let head else { return }
            self.head = nil
            let decision = tooLong
                ? DoHRequest.reject(status: 413, message: "DNS message longer than \(DoHRequest.maximumBody) bytes")
                : DoHRequest.decide(
                    method: head.method.rawValue, uri: head.uri, authorization: head.headers.first(name: "authorization"), token: token, body: body)
            body = []
            let keepAlive = head.isKeepAlive && !tooLong
            switch decision {
            case .reject(let status, let message):
                write(status: status, type: "text/plain", body: Array((message + "\n").utf8), keepAlive: keepAlive, channel: context.channel)
            case .query(let message, let json):
                let channel = context.channel
                let send: @Sendable ([UInt8]?) -> Void = { answer in
                    guard let answer else {
                        Self.write(status: 400, type: "text/plain", body: Array("not a DNS query\n".utf8), keepAlive: keepAlive, channel: channel)
                        return
                    }
                    if let json {
                        Self.write(status: 200, type: "application/dns-json", body: Array(DoHRequest.json(answer: answer, question: json).utf8),
                                   keepAlive: keepAlive, channel: channel)
                    } else {
                        Self.write(status: 200, type: "application/dns-message", body: answer, keepAlive: keepAlive, channel: channel)
                    }
                }
                switch responder.respond(message, from: context.channel.remoteAddress, transport: .tcp, on: context.eventLoop) {
                case .now(let answer): send(answer)
                case .later(let future): future.whenSuccess(send)
                }
            }
        }
    }

    private func write(status: Int, type: String, body: [UInt8], keepAlive: Bool, channel: any Channel) {
        Self.write(status: status, type: type, body: body, keepAlive: keepAlive, channel: channel)
    }

    static func write(status: Int, type: String, body: [UInt8], keepAlive: Bool, channel: any Channel) {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: type)
        headers.add(name: "content-length", value: "\(body.count)")
        headers.add(name: "cache-control", value: "no-store")
        if !keepAlive { headers.add(name: "connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: headers)
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(channel.allocator.buffer(bytes: body))), promise: nil)
        let done = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        if !keepAlive { done.whenComplete { _ in channel.close(promise: nil) } }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
