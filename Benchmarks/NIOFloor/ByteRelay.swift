// The --bytes floor (bench/bench pinned's `nio-byte-relay` target): what a forward path costs on
// SwiftNIO when HTTP/1 heads are parsed by a scanner of its own instead of NIOHTTP1, the design
// docs/benchmarks.md names as the way to the forward path's CPU goal. One handler per side, no
// NIOAny per part, no String or HTTPHeaders per field: the head is scanned once, the outgoing head is
// the kept field lines copied as byte ranges into a reused buffer plus the fields a proxy adds
// (Host, Via, Connection: close when the origin closes), and Content-Length bodies go on as
// slices.
//
// What the scanner checks, byte by byte: a token method, a target and reason without control
// bytes, HTTP/1.0 or 1.1, a three-digit status, token field names, values without control bytes
// but HTAB, CRLF line ends, a head of at most 64 KiB; an absolute-form http:// target whose
// authority is host characters and an optional numeric port; Content-Length digits (two
// different values, or an empty one, are invalid); Connection tokens (close); hop-by-hop fields
// dropped. Responses to HEAD and 1xx/204/304 responses have no body.
//
// It is a measuring stick, not a proxy: no chunked bodies (Transfer-Encoding is refused), no
// state machine, pool, records, logs, metrics or Via loop check. What the real proxy does on top
// of it is the proxy's figure above this floor (docs/benchmarks.md, bench/bench pinned).
import NIOCore

/// One side of a --bytes pair: scans the heads it reads, writes rewritten heads and body slices
/// to its partner, flushing the partner once per read cycle.
final class ByteSide: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    let isClientSide: Bool
    var partner: ByteSide?
    private var context: ChannelHandlerContext?
    private var head = ScannedHead()
    private var pending: ByteBuffer?
    private var bodyLeft = 0
    /// Origin side: for each request sent, whether its response has no body (HEAD).
    private var headRequests = CircularBuffer<Bool>()
    /// Origin side: the client connection closes once the current response is written.
    private var closeClientAfterBody = false
    /// The last head's buffer, reused once the socket has written it (as the proxy's writer does).
    private var lastHead: ByteBuffer?

    init(clientSide: Bool) { self.isClientSide = clientSide }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        if var held = pending.take() {
            held.writeBuffer(&buffer)
            buffer = held
        }
        while buffer.readableBytes > 0 {
            if bodyLeft > 0 {
                let slice = buffer.readSlice(length: min(bodyLeft, buffer.readableBytes))!
                bodyLeft -= slice.readableBytes
                partner?.context?.write(NIOAny(slice), promise: nil)
                if bodyLeft == 0 { messageEnded() }
                continue
            }
            let outcome = buffer.withUnsafeReadableBytes { head.scan($0, request: isClientSide) }
            switch outcome {
            case .incomplete:
                pending = buffer
                return
            case .invalid:
                context.close(promise: nil)
                return
            case .complete:
                let rewritten = buffer.withUnsafeReadableBytes { rewrite($0, allocator: context.channel.allocator) }
                guard let rewritten else {
                    context.close(promise: nil)
                    return
                }
                buffer.moveReaderIndex(forwardBy: head.length)
                partner?.context?.write(NIOAny(rewritten), promise: nil)
                if bodyLeft == 0 { messageEnded() }
            }
        }
    }

    /// A message's last byte went to the partner.
    private func messageEnded() {
        guard closeClientAfterBody, let client = partner?.context else { return }
        client.flush()
        client.close(promise: nil)
    }

    /// The outgoing head: origin-form request line (or the status line as HTTP/1.1), the kept
    /// field lines as they came, then Host (requests), Connection: close and Via. Sets `bodyLeft`.
    /// Nil: a request whose target is not absolute-form http://.
    private func rewrite(_ bytes: UnsafeRawBufferPointer, allocator: ByteBufferAllocator) -> ByteBuffer? {
        var out: ByteBuffer
        if var reused = lastHead.take() {
            reused.clear(minimumCapacity: head.length + 64)
            out = reused
        } else {
            out = allocator.buffer(capacity: max(1024, head.length + 64))
        }
        var authority = 0..<0
        var interim = false
        if isClientSide {
            guard let found = ScannedHead.authority(bytes, head.second) else { return nil }
            authority = found
            partner?.headRequests.append(ScannedHead.isHEAD(bytes, head.first))
            out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[head.first]))
            out.writeInteger(UInt8(ascii: " "))
            if authority.upperBound == head.second.upperBound {
                out.writeInteger(UInt8(ascii: "/"))
            } else {
                out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[authority.upperBound..<head.second.upperBound]))
            }
            out.writeStaticString(" HTTP/1.1\r\n")
            bodyLeft = head.contentLength ?? 0
        } else {
            interim = head.status >= 100 && head.status < 200 && head.status != 101
            let noBody = interim || head.status == 204 || head.status == 304
                || (headRequests.first ?? false)
            if !interim {
                _ = headRequests.popFirst()
                closeClientAfterBody = head.close
            }
            bodyLeft = noBody ? 0 : head.contentLength ?? 0
            out.writeStaticString("HTTP/1.1 ")
            out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[head.second.lowerBound..<head.third.upperBound]))
            out.writeStaticString("\r\n")
        }
        for field in head.fields where !ScannedHead.dropped(bytes, field.name) {
            out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[field.name.lowerBound..<field.value.upperBound]))
            out.writeStaticString("\r\n")
        }
        if isClientSide {
            out.writeStaticString("Host: ")
            out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[authority]))
            out.writeStaticString("\r\n")
        } else if head.close && !interim {
            out.writeStaticString("Connection: close\r\n")
        }
        out.writeStaticString("Via: 1.1 nio-floor\r\n\r\n")
        if out.capacity <= 4096 { lastHead = out }
        return out
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.context?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
    }
}
