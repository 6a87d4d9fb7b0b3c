import ProxyKit

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOHTTP1
import Synchronization

final class AdminHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let routes: AdminRoutes
    private var head: HTTPRequestHead?
    /// A request must be complete within this time of the connection opening or of the previous
    /// response: it bounds slow heads and idle keep-alive connections alike.
    private let requestTimeout: TimeAmount
    private var deadline: Scheduled<Void>?
    /// Set for a client outside the ACL: every request gets 403 with this text, then close.
    private let refusal: String?

    init(routes: AdminRoutes, requestTimeout: TimeAmount, refusal: String? = nil) {
        self.routes = routes
        self.requestTimeout = requestTimeout
        self.refusal = refusal
    }

    func handlerAdded(context: ChannelHandlerContext) {
        armDeadline(context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    private func armDeadline(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: requestTimeout) {
            context.close(promise: nil)
        }
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
            deadline?.cancel()
            deadline = nil
            let components = URLComponents(string: head.uri)
            var query: [String: String] = [:]
            for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
            let path = components?.path ?? head.uri
            // Liveness is no secret: probes from a node (Kubernetes) need not be in the ACL.
            if let refusal, path != "/healthz" {
                write(.text(.forbidden, refusal), for: head, close: true, context: context)
                return
            }
            guard AdminServer.isAcceptableHost(head.headers.first(name: "host")) else {
                write(
                    .text(.forbidden, "the admin listener answers only to an IP address or localhost as Host (a guard against DNS rebinding)"),
                    for: head, close: true, context: context)
                return
            }
            // A browser adds Origin to cross-site POST/DELETE: a page elsewhere must not purge the
            // cache (or change anything) through a user's browser. Tools send no Origin; the admin
            // page's own requests carry this listener's origin.
            if [.POST, .DELETE, .PUT, .PATCH].contains(head.method), let origin = head.headers.first(name: "origin"),
               origin != "http://" + (head.headers.first(name: "host") ?? "")
            {
                write(.text(.forbidden, "cross-site request refused: Origin \(ProxyError.sanitized(origin)) is not this admin listener"),
                      for: head, close: true, context: context)
                return
            }
            routes.respond(method: head.method, path: path, query: query, requestHost: head.headers.first(name: "host"), on: context.eventLoop)
                .assumeIsolated()
                .whenSuccess { response in
                    self.write(response, for: head, context: context)
                }
        }
    }

    private func write(_ response: AdminRoutes.Response, for head: HTTPRequestHead, close: Bool = false, context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: response.body.utf8.count)
        buffer.writeString(response.body)
        var responseHead = HTTPResponseHead(version: head.version, status: response.status)
        responseHead.headers.add(name: "Content-Type", value: response.contentType)
        responseHead.headers.add(name: "Content-Length", value: String(buffer.readableBytes))
        responseHead.headers.add(name: "Cache-Control", value: "no-store")
        for (name, value) in response.headers { responseHead.headers.add(name: name, value: value) }
        if close { responseHead.headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let keepAlive = head.isKeepAlive && !close
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            if !keepAlive { context.close(promise: nil) }
        }
        if keepAlive { armDeadline(context: context) }
    }
}

@available(*, unavailable)
extension AdminHandler: Sendable {}

/// Counts open admin connections; beyond the limit new ones are closed at accept.
final class AdminConnectionLimit: Sendable {
    private let count = Atomic<Int>(0)
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes a slot, or returns false (and takes none) when all are in use.
    func open() -> Bool {
        let now = count.wrappingAdd(1, ordering: .relaxed).newValue
        if now > limit {
            count.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func closed() {
        count.wrappingSubtract(1, ordering: .relaxed)
    }
}
