import NIOCore

/// The chunked coding's writer (RFC 9112 §7.1): the proxy re-chunks every chunked or
/// close-delimited body it relays to an HTTP/1.1 peer, so what it writes is framed by it alone.
/// Body bytes are never copied: a chunk goes out as its size line, the caller's buffer, a CRLF.
package enum ChunkedEncoder {
    /// Writes one chunk of `part` through `write`: size line, the bytes, CRLF. An empty part
    /// writes nothing (as a chunk it would end the body).
    package static func writeChunk(_ part: ByteBuffer, allocator: ByteBufferAllocator, write: (ByteBuffer) -> Void) {
        guard part.readableBytes > 0 else { return }
        var size = allocator.buffer(capacity: 20)
        writeSizeLine(part.readableBytes, into: &size)
        write(size)
        write(part)
        // The same storage: only its CRLF is readable.
        size.moveReaderIndex(forwardBy: size.readableBytes - 2)
        write(size)
    }

    /// `length` in lowercase hex, then CRLF.
    package static func writeSizeLine(_ length: Int, into buffer: inout ByteBuffer) {
        precondition(length > 0)
        let digits = Array("0123456789abcdef".utf8)
        var shift = (Int.bitWidth - length.leadingZeroBitCount - 1) / 4 * 4
        while shift >= 0 {
            buffer.writeInteger(digits[(length >> shift) & 0xF])
            shift -= 4
        }
        buffer.writeInteger(UInt16(0x0D0A))
    }

    /// The last chunk and the trailer section: the fields a trailer may carry on (`kept`), copied
    /// as they arrived, then the empty line.
    package static func writeEnd(_ trailers: HTTP1Trailers?, into buffer: inout ByteBuffer) {
        buffer.writeStaticString("0\r\n")
        if let trailers {
            trailers.bytes.withUnsafeReadableBytes { raw in
                for field in trailers.fields where field.kept {
                    buffer.writeBytes(UnsafeRawBufferPointer(rebasing: raw[field.line]))
                }
            }
        }
        buffer.writeStaticString("\r\n")
    }
}
