import NIOCore
import NIOHTTP1

/// Serializes the messages the proxy forwards straight into `ByteBuffer`s: a head into one
/// buffer, body bytes as they came (framed as chunks when the message is chunked), the end as the
/// last chunk and trailers. It replaces NIO's HTTP encoders on both sides of an exchange (one
/// handler and one `NIOAny` box less per part) and writes exactly the bytes they wrote with
/// `automaticallySetFramingHeaders` off: the proxy decides framing itself (docs/http.md) and the
/// head it is given already carries it.
package struct HTTPMessageWriter {
    /// Whether the message being written is chunked: decided once, from its head.
    private(set) var isChunked = false
    /// The last head's buffer, kept to write the next head into: once the socket has written it,
    /// this is its only reference and `clear()` reuses its storage (no allocation per head on a
    /// kept-alive connection). Heads past `reusedCapacity` are not kept.
    private var lastHead: ByteBuffer?
    static let reusedCapacity = 4096

    package init() {}

    /// An empty buffer for a head: the last one's storage when nothing else holds it.
    private mutating func headBuffer(capacity: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
        guard var buffer = lastHead.take() else { return allocator.buffer(capacity: capacity) }
        buffer.clear(minimumCapacity: capacity)
        return buffer
    }

    private mutating func keep(_ buffer: ByteBuffer) {
        if buffer.capacity <= Self.reusedCapacity { lastHead = buffer }
    }

    /// The response head as one buffer. A 1xx head (other than 101) is followed by another head
    /// and leaves the framing of the final response undecided.
    package mutating func head(_ head: HTTPResponseHead, allocator: ByteBufferAllocator) -> ByteBuffer {
        let code = head.status.code
        if !(100..<200).contains(code) || code == 101 {
            isChunked = Self.isChunked(head.headers, version: head.version)
        }
        var buffer = headBuffer(capacity: Self.estimatedSize(of: head.headers, startLine: 32), allocator: allocator)
        buffer.writeVersion(head.version)
        buffer.writeInteger(UInt8(ascii: " "))
        buffer.writeString(String(code))
        buffer.writeInteger(UInt8(ascii: " "))
        buffer.writeString(head.status.reasonPhrase)
        buffer.writeStaticString("\r\n")
        buffer.writeHeaderLines(head.headers)
        keep(buffer)
        return buffer
    }

    /// A final head written elsewhere (a relayed origin head, `HeadWriter`): the body that
    /// follows is framed as `chunked` says.
    package mutating func headWritten(chunked: Bool) {
        isChunked = chunked
    }

    /// The request head as one buffer.
    package mutating func head(_ head: HTTPRequestHead, allocator: ByteBufferAllocator) -> ByteBuffer {
        isChunked = Self.isChunked(head.headers, version: head.version)
        var buffer = headBuffer(capacity: Self.estimatedSize(of: head.headers, startLine: head.uri.utf8.count + 24), allocator: allocator)
        buffer.writeString(head.method.rawValue)
        buffer.writeInteger(UInt8(ascii: " "))
        buffer.writeString(head.uri)
        buffer.writeInteger(UInt8(ascii: " "))
        buffer.writeVersion(head.version)
        buffer.writeStaticString("\r\n")
        buffer.writeHeaderLines(head.headers)
        keep(buffer)
        return buffer
    }

    /// Writes a body part through `write`: as is, or as one chunk (size line, bytes, CRLF). An
    /// empty part writes nothing: as a chunk it would end the body.
    package func body(_ part: ByteBuffer, allocator: ByteBufferAllocator, write: (ByteBuffer) -> Void) {
        guard isChunked else {
            if part.readableBytes > 0 { write(part) }
            return
        }
        guard part.readableBytes > 0 else { return }
        var size = allocator.buffer(capacity: 20)
        size.writeString(String(part.readableBytes, radix: 16))
        size.writeStaticString("\r\n")
        write(size)
        write(part)
        // The same storage: only its CRLF is readable.
        size.moveReaderIndex(forwardBy: size.readableBytes - 2)
        write(size)
    }

    /// The message's end: the last chunk and trailers when chunked, nothing otherwise.
    package mutating func end(_ trailers: HTTPHeaders?, allocator: ByteBufferAllocator) -> ByteBuffer? {
        defer { isChunked = false }
        guard isChunked else { return nil }
        guard let trailers else {
            var buffer = allocator.buffer(capacity: 5)
            buffer.writeStaticString("0\r\n\r\n")
            return buffer
        }
        var buffer = allocator.buffer(capacity: Self.estimatedSize(of: trailers, startLine: 3))
        buffer.writeStaticString("0\r\n")
        buffer.writeHeaderLines(trailers)
        return buffer
    }

    /// NIO's rule with automatic framing off: an HTTP/1.1 message whose first Transfer-Encoding
    /// field is exactly `chunked` is written as chunks.
    static func isChunked(_ headers: HTTPHeaders, version: HTTPVersion) -> Bool {
        version.major == 1 && version.minor >= 1 && headers.first(name: "transfer-encoding") == "chunked"
    }

    private static func estimatedSize(of headers: HTTPHeaders, startLine: Int) -> Int {
        var size = startLine + 2
        for (name, value) in headers { size += name.utf8.count + value.utf8.count + 4 }
        return size
    }
}

extension ByteBuffer {
    fileprivate mutating func writeVersion(_ version: HTTPVersion) {
        switch (version.major, version.minor) {
        case (1, 1): writeStaticString("HTTP/1.1")
        case (1, 0): writeStaticString("HTTP/1.0")
        default:
            writeStaticString("HTTP/")
            writeString(String(version.major))
            writeInteger(UInt8(ascii: "."))
            writeString(String(version.minor))
        }
    }

    /// `name: value` lines and the empty line that ends the block.
    fileprivate mutating func writeHeaderLines(_ headers: HTTPHeaders) {
        for (name, value) in headers {
            writeString(name)
            writeStaticString(": ")
            writeString(value)
            writeStaticString("\r\n")
        }
        writeStaticString("\r\n")
    }
}
