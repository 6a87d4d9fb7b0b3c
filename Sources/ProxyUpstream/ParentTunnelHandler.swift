import HTTPDNS
import NIOCore
import OpenSSLTLS
import ProxyKit

/// The first handler of a connection to the parent proxy: asks it for a tunnel (`CONNECT target`)
/// as soon as the TCP connection is up, holds every write from the handlers above until the
/// parent's answer, then either steps aside (2xx: the bytes written so far go out, bytes that
/// came after the answer are handed up) or fails `result` with `ParentRefusal` and closes.
/// Interim 1xx answers are skipped; the answer's heads are bounded (16 KiB together); nothing
/// after a refusal is read.
final class ParentTunnelHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The parent answered the CONNECT with something other than 2xx.
    struct ParentRefusal: Error, CustomStringConvertible {
        var status: Int
        var statusLine: String
        var description: String { statusLine }
    }

    /// The parent closed (or broke) the connection before a complete answer.
    struct ParentClosed: Error, CustomStringConvertible {
        var description: String
    }

    /// TLS to an `https://` parent failed (below this handler) before the tunnel was up.
    struct ParentTLSFailed: Error, CustomStringConvertible {
        var error: TLSError
        var description: String { "\(error)" }
    }

    static let maximumHeadLength = 16 * 1024

    let target: String
    let authorization: String?
    /// How long the parent may take to answer the CONNECT.
    let answerTimeout: TimeAmount
    private var timer: Scheduled<Void>?
    /// Succeeds when the tunnel is up; fails with `ParentRefusal` or `ParentClosed`.
    let result: EventLoopPromise<Void>
    private var answer: ByteBuffer?
    /// Bytes of the answer's heads consumed so far (interim ones included), against the bound.
    private var headBytesSeen = 0
    private var held: [(ByteBuffer, EventLoopPromise<Void>?)] = []
    private var heldFlush = false
    private var done = false

    /// `target`: `host:port` as it goes on the request line; `credentials`: `user:password`.
    init(target: String, credentials: String?, answerTimeout: TimeAmount = .seconds(10), result: EventLoopPromise<Void>) {
        self.target = target
        self.answerTimeout = answerTimeout
        self.authorization = credentials.map { "Basic " + Self.base64(Array($0.utf8)) }
        self.result = result
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { sendConnect(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        sendConnect(context: context)
        context.fireChannelActive()
    }

    private func sendConnect(context: ChannelHandlerContext) {
        guard answer == nil else { return }
        answer = context.channel.allocator.buffer(capacity: 256)
        var request = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n"
        if let authorization { request += "Proxy-Authorization: \(authorization)\r\n" }
        request += "\r\n"
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: request)), promise: nil)
        let timeout = answerTimeout
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [weak self] in
            self?.fail(ParentClosed(description: "the parent did not answer CONNECT within \(timeout.nanoseconds / 1_000_000) ms"), context: context)
        }
        if !((try? context.channel.syncOptions?.getOption(ChannelOptions.autoRead)) ?? true) { context.read() }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard done else {
            held.append((unwrapOutboundIn(data), promise))
            return
        }
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        guard done else {
            heldFlush = true
            return
        }
        context.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done, var answer else {
            context.fireChannelRead(data)
            return
        }
        var bytes = unwrapInboundIn(data)
        answer.writeBuffer(&bytes)
        var status = 0
        var statusLine = ""
        // Interim answers (100, 102, 103: RFC 9110 §15.2) come before the final one and say nothing
        // about the tunnel; the head bound counts them all.
        repeat {
            self.answer = answer
            guard let end = answer.readableBytesView.firstRange(of: [13, 10, 13, 10]) else {
                if answer.readableBytes + headBytesSeen > Self.maximumHeadLength {
                    fail(ParentClosed(description: "the parent's answer to CONNECT has a head over \(Self.maximumHeadLength) bytes"), context: context)
                }
                return
            }
            let headLength = end.upperBound - answer.readableBytesView.startIndex
            headBytesSeen += headLength
            guard headBytesSeen <= Self.maximumHeadLength else {
                fail(ParentClosed(description: "the parent's answer to CONNECT has a head over \(Self.maximumHeadLength) bytes"), context: context)
                return
            }
            let head = answer.readSlice(length: headLength).map { String(buffer: $0) } ?? ""
            statusLine = ProxyError.sanitized(head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? "", limit: 200)
            let parts = statusLine.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let code = Int(parts[1]), (100...599).contains(code) else {
                fail(ParentClosed(description: "the parent's answer to CONNECT is not HTTP: '\(statusLine.prefix(80))'"), context: context)
                return
            }
            status = code
        } while (100...199).contains(status) && status != 101
        self.answer = answer
        guard (200...299).contains(status) else {
            fail(ParentRefusal(status: status, statusLine: String(statusLine.prefix(200))), context: context)
            return
        }
        // The tunnel is up: what the handlers above wrote goes out, bytes after the answer go up.
        done = true
        timer?.cancel()
        timer = nil
        let rest = answer
        self.answer = nil
        for (buffer, promise) in held { context.write(wrapOutboundOut(buffer), promise: promise) }
        held = []
        if heldFlush { context.flush() }
        result.succeed()
        if rest.readableBytes > 0 {
            context.fireChannelRead(wrapInboundOut(rest))
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done { fail(ParentClosed(description: "the parent closed the connection before answering CONNECT"), context: context) }
        context.fireChannelInactive()
    }

    /// An `https://` parent's own handshake completing below this handler: not the origin's
    /// (which the handlers above wait for), so it stops here.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !done, event is TLSClientEvent { return }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done, let tls = error as? TLSError {
            fail(ParentTLSFailed(error: tls), context: context)
            return
        }
        if !done {
            fail(ParentClosed(description: "the connection to the parent failed: \(error)"), context: context)
            return
        }
        context.fireErrorCaught(error)
    }

    private func fail(_ error: any Error, context: ChannelHandlerContext) {
        guard !done else { return }
        done = true
        timer?.cancel()
        timer = nil
        answer = nil
        for (_, promise) in held { promise?.fail(error) }
        held = []
        result.fail(error)
        context.close(promise: nil)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if !done { fail(ParentClosed(description: "removed before the parent answered"), context: context) }
    }
}

@available(*, unavailable)
extension ParentTunnelHandler: Sendable {}

extension ParentTunnelHandler {
    /// RFC 4648 §4 base64 with padding, for Basic credentials: the DoH encoder's base64url with
    /// the two letters that differ swapped back and the padding put on.
    static func base64(_ bytes: [UInt8]) -> String {
        var text = String(DNSMessage.base64URL(bytes).map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while text.utf8.count % 4 != 0 { text.append("=") }
        return text
    }
}
