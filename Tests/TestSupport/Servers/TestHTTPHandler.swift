import NIOCore
import NIOHTTP1

/// Routes of the test server:
/// - `/ok`: 200 "ok" with `X-Test-Server: 1`.
/// - `/echo`: 200 with the request body, its Content-Type, and `X-Echo-Method`.
/// - `/never`: never answers (timeouts, cancellation, shutdown).
/// - `/big?bytes=N`: N bytes with Content-Length; `/chunked?bytes=N`: N bytes chunked, no length.
/// - anything else: 404.
package final class TestHTTPHandler: ChannelInboundHandler {
    package typealias InboundIn = HTTPServerRequestPart
    package typealias OutboundOut = HTTPServerResponsePart

    private let recorder: TestServerRecorder
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    package init(recorder: TestServerRecorder) {
        self.recorder = recorder
    }

    package func channelActive(context: ChannelHandlerContext) {
        recorder.connectionAccepted()
        context.fireChannelActive()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        recorder.connectionClosed()
        context.fireChannelInactive()
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead):
            head = requestHead
            body = []
        case .body(var buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let head else { return }
            self.head = nil
            recorder.requestReceived(.init(head: head, body: body))
            route(head, context: context)
        }
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Clients aborting mid-response (size limit, cancellation) are expected here.
        context.close(promise: nil)
    }

    private func route(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        switch path {
        case "/ok":
            respond(context, body: Array("ok".utf8), headers: [("X-Test-Server", "1"), ("Content-Type", "text/plain")])
        case "/echo":
            var headers = [("X-Echo-Method", head.method.rawValue)]
            if let contentType = head.headers.first(name: "Content-Type") {
                headers.append(("Content-Type", contentType))
            }
            respond(context, body: body, headers: headers)
        case "/never":
            break
        case "/big":
            respond(context, body: [UInt8](repeating: 0x61, count: Self.byteCount(head.uri)), headers: [])
        case "/chunked":
            respondChunked(context, totalBytes: Self.byteCount(head.uri))
        default:
            respond(context, status: .notFound, body: Array("not found".utf8), headers: [])
        }
    }

    private static func byteCount(_ uri: String) -> Int {
        guard let range = uri.firstRange(of: "bytes=") else { return 0 }
        return Int(uri[range.upperBound...].prefix { $0.isNumber }) ?? 0
    }

    private func respond(
        _ context: ChannelHandlerContext,
        status: HTTPResponseStatus = .ok,
        body: [UInt8],
        headers: [(String, String)]
    ) {
        var responseHeaders = HTTPHeaders(headers)
        responseHeaders.replaceOrAdd(name: "Content-Length", value: "\(body.count)")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: responseHeaders))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Without Content-Length NIO frames the body as chunked, so the client learns the size only
    /// by reading it: the case the client's own byte limit must catch.
    private func respondChunked(_ context: ChannelHandlerContext, totalBytes: Int) {
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok))), promise: nil)
        var remaining = totalBytes
        let chunk = [UInt8](repeating: 0x62, count: 64 * 1024)
        while remaining > 0 {
            let size = min(remaining, chunk.count)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: chunk[..<size])))), promise: nil)
            remaining -= size
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
