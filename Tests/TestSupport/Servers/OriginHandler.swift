import NIOCore
import NIOHTTP1

/// Per-connection HTTP/1.1 handler of `TestOrigin` (see TestOrigin for the routes).
///
/// Pipeline layout (names matter, they are removed for upgrades):
///   "raw-tap" (RawTap) | "decoder" | "encoder" | "pipelining" (HTTPServerPipelineHandler) | "origin" (this)
package final class OriginHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = HTTPServerRequestPart
    package typealias OutboundOut = HTTPServerResponsePart

    private enum Route {
        case hello
        case bytes(count: Int, chunked: Bool)
        case digest
        case slow
        /// Head announcing 2N bytes, N of them, then silence.
        case stall(count: Int)
        case closeDelimited(count: Int)
        case upgrade
        case notFound
        case badRequest(String)
    }

    /// Where streamed pattern bytes go: through the HTTP encoder, or raw onto the socket (close-delimited).
    private enum Sink {
        case http
        case raw
    }

    private struct Streaming {
        var remaining: Int
        var offset: Int
        var sink: Sink
        var keepAlive: Bool
    }

    private let recorder: Guarded<[HTTPRequestHead]>
    private let rawTap: RawTap
    private var route: Route = .notFound
    private var head: HTTPRequestHead?
    private var hasher = FNV1a64()
    private var streaming: Streaming?

    private let closeEverything: Bool

    package init(recorder: Guarded<[HTTPRequestHead]>, rawTap: RawTap, closeEverything: Bool = false) {
        self.recorder = recorder
        self.rawTap = rawTap
        self.closeEverything = closeEverything
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            recorder.withLock { $0.append(head) }
            self.head = head
            self.hasher = FNV1a64()
            self.route = Self.route(for: head)
            if closeEverything || Self.path(of: head.uri) == "/reset" {
                context.close(promise: nil)
                return
            }
            if Self.path(of: head.uri) == "/expect",
               head.headers["expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                let interim = HTTPResponseHead(version: head.version, status: .continue)
                context.writeAndFlush(wrapOutboundOut(.head(interim)), promise: nil)
            }
        case .body(var buffer):
            if case .digest = route {
                buffer.withUnsafeReadableBytes { hasher.update($0) }
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
            }
        case .end:
            guard let head else { return }
            respond(context: context, head: head)
        }
    }

    package func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            pump(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        streaming = nil
        context.fireChannelInactive()
    }

    package func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }

    // MARK: - Routing

    package static func path(of uri: String) -> String {
        var rest = Substring(uri)
        if let schemeEnd = rest.range(of: "://") {
            rest = rest[schemeEnd.upperBound...]
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? "/"
        }
        if let q = rest.firstIndex(of: "?") { rest = rest[..<q] }
        return String(rest)
    }

    package static func query(of uri: String) -> String {
        guard let q = uri.firstIndex(of: "?") else { return "" }
        return String(uri[uri.index(after: q)...])
    }

    private static func route(for head: HTTPRequestHead) -> Route {
        let path = path(of: head.uri)
        let method = head.method
        switch path {
        case "/hello" where method == .GET:
            return .hello
        case "/digest" where method == .POST || method == .PUT, "/expect" where method == .POST:
            return .digest
        case "/slow" where method == .GET:
            return .slow
        case "/upgrade" where method == .GET:
            let upgrade = head.headers["upgrade"].joined(separator: ",").lowercased()
            let connection = head.headers[canonicalForm: "connection"].map { $0.lowercased() }
            guard upgrade.contains("echo"), connection.contains("upgrade") else {
                return .badRequest("upgrade requires 'Upgrade: echo' and 'Connection: upgrade'\n")
            }
            return .upgrade
        default:
            break
        }
        if method == .GET, path.hasPrefix("/bytes/"), let n = Int(path.dropFirst("/bytes/".count)), n >= 0 {
            let chunked = query(of: head.uri).split(separator: "&").contains("chunked=1")
            return .bytes(count: n, chunked: chunked)
        }
        if method == .GET, path.hasPrefix("/stall/"), let n = Int(path.dropFirst("/stall/".count)), n > 0 {
            return .stall(count: n)
        }
        if method == .GET, path.hasPrefix("/close-delimited/"),
           let n = Int(path.dropFirst("/close-delimited/".count)), n >= 0 {
            return .closeDelimited(count: n)
        }
        return .notFound
    }

    private static func seen(_ headers: HTTPHeaders, _ name: String) -> String {
        let values = headers[name]
        return values.isEmpty ? "none" : values.joined(separator: ", ")
    }

    // MARK: - Responses

    private func respond(context: ChannelHandlerContext, head: HTTPRequestHead) {
        let keepAlive = head.isKeepAlive
        switch route {
        case .hello:
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "text/plain")
            headers.add(name: "X-Seen-Host", value: Self.seen(head.headers, "host"))
            headers.add(name: "X-Seen-Via", value: Self.seen(head.headers, "via"))
            headers.add(name: "X-Seen-Connection", value: Self.seen(head.headers, "connection"))
            sendSimple(context: context, head: head, status: .ok, headers: headers, body: "hello")
        case .digest:
            let te = Self.seen(head.headers, "transfer-encoding")
            let cl = Self.seen(head.headers, "content-length")
            let json = "{\"bytes\":\(hasher.count),\"fnv\":\"\(hasher.hex)\",\"te\":\"\(te)\",\"cl\":\"\(cl)\"}"
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            sendSimple(context: context, head: head, status: .ok, headers: headers, body: json)
        case .slow:
            break  // never answers
        case .stall(let count):
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: String(2 * count))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil)
            var buffer = context.channel.allocator.buffer(capacity: count)
            buffer.writeRepeatingByte(UInt8(ascii: "s"), count: count)
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        case .bytes(let count, let chunked):
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/octet-stream")
            // Tells pipelined responses apart: the request's query comes back.
            headers.add(name: "X-Seen-Query", value: Self.query(of: head.uri))
            if chunked {
                headers.add(name: "Transfer-Encoding", value: "chunked")
            } else {
                headers.add(name: "Content-Length", value: String(count))
            }
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            let response = HTTPResponseHead(version: head.version, status: .ok, headers: headers)
            context.write(wrapOutboundOut(.head(response)), promise: nil)
            streaming = Streaming(remaining: count, offset: 0, sink: .http, keepAlive: keepAlive)
            pump(context: context)
        case .closeDelimited(let count):
            let rawHead = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n"
            rawTap.write(context.channel.allocator.buffer(string: rawHead))
            streaming = Streaming(remaining: count, offset: 0, sink: .raw, keepAlive: false)
            pump(context: context)
        case .upgrade:
            var headers = HTTPHeaders()
            headers.add(name: "Upgrade", value: "echo")
            headers.add(name: "Connection", value: "upgrade")
            let response = HTTPResponseHead(version: head.version, status: .switchingProtocols, headers: headers)
            let pipeline = context.pipeline
            let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.head(response))).whenComplete { result in
                guard case .success = result else { return }
                Self.switchToEcho(pipeline: pipeline, originContext: loopBoundContext.value)
            }
        case .badRequest(let message):
            sendSimple(context: context, head: head, status: .badRequest, headers: HTTPHeaders(), body: message)
        case .notFound:
            sendSimple(context: context, head: head, status: .notFound, headers: HTTPHeaders(), body: "not found\n")
        }
    }

    private func sendSimple(
        context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus,
        headers: HTTPHeaders, body: String
    ) {
        var headers = headers
        let keepAlive = head.isKeepAlive
        headers.replaceOrAdd(name: "Content-Length", value: String(body.utf8.count))
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        let response = HTTPResponseHead(version: head.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// Writes 64 KiB pattern pieces while the channel is writable; resumes on writability changes.
    private func pump(context: ChannelHandlerContext) {
        guard var state = streaming else { return }
        while state.remaining > 0 && context.channel.isWritable {
            let n = min(65_536, state.remaining)
            let start = state.offset % BytePattern.period
            var buffer = context.channel.allocator.buffer(capacity: n)
            buffer.writeBytes(BytePattern.table[start..<(start + n)])
            state.remaining -= n
            state.offset += n
            switch state.sink {
            case .http: context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            case .raw: rawTap.write(buffer)
            }
        }
        guard state.remaining == 0 else {
            streaming = state
            context.flush()
            rawTap.flush()
            return
        }
        streaming = nil
        let channel = context.channel
        switch state.sink {
        case .http:
            let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if !state.keepAlive { done.whenComplete { _ in channel.close(promise: nil) } }
        case .raw:
            if let done = rawTap.writeAndFlush(channel.allocator.buffer(capacity: 0)) {
                done.whenComplete { _ in channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
        }
    }

    /// After a 101: removes every HTTP handler and echoes raw bytes from then on.
    private static func switchToEcho(pipeline: ChannelPipeline, originContext: ChannelHandlerContext) {
        let sync = pipeline.syncOperations
        do {
            try sync.addHandler(RawEchoHandler(), position: .last)
            sync.removeHandler(name: "encoder", promise: nil)
            sync.removeHandler(name: "pipelining", promise: nil)
            sync.removeHandler(context: originContext, promise: nil)
            // Removed last: forwards bytes that arrived after the upgrade request to the echo handler.
            sync.removeHandler(name: "decoder", promise: nil)
        } catch {
            originContext.close(promise: nil)
        }
    }
}

/// Sits next to the pipeline head so raw bytes can bypass the HTTP encoder (close-delimited responses).
package final class RawTap: ChannelOutboundHandler, RemovableChannelHandler {
    package typealias OutboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    private var context: ChannelHandlerContext?

    package func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    package func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    package func write(_ buffer: ByteBuffer) {
        context?.write(wrapOutboundOut(buffer), promise: nil)
    }

    package func flush() {
        context?.flush()
    }

    package func writeAndFlush(_ buffer: ByteBuffer) -> EventLoopFuture<Void>? {
        context?.writeAndFlush(wrapOutboundOut(buffer))
    }
}

/// Echoes every byte it receives (used after an HTTP upgrade).
package final class RawEchoHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.write(data, promise: nil)
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
        context.fireChannelReadComplete()
    }

    package func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
