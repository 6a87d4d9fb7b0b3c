import NIOCore

/// DNS over TCP framing (RFC 1035 section 4.2.2, RFC 7766): each message is preceded by its length
/// in two bytes. The length field bounds a frame to 65,535 bytes, so the buffer cannot grow
/// further.
struct DNSTCPFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self),
              buffer.readableBytes >= 2 + Int(length)
        else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 2)
        let frame = buffer.readSlice(length: Int(length))!
        context.fireChannelRead(wrapInboundOut(frame))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }

    /// `message` with its length prefix.
    static func frame(_ message: [UInt8], allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: message.count + 2)
        buffer.writeInteger(UInt16(clamping: message.count))
        buffer.writeBytes(message.prefix(65535))
        return buffer
    }

    /// Whether `bytes` is a DNS response (QR=1) with the ID `id`.
    static func isResponse(_ bytes: [UInt8], id: UInt16) -> Bool {
        bytes.count >= 12 && (UInt16(bytes[0]) << 8 | UInt16(bytes[1])) == id && bytes[2] & 0x80 != 0
    }
}
