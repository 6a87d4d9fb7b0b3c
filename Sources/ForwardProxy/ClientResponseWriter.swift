import HTTP1Codec
import NIOCore
import ProxyHTTP

/// Writes the responses a client connection gets as bytes: a relayed origin head from its own
/// kept lines (`HeadWriter`, no field turned into text), the proxy's own heads field by field
/// (`HTTPMessageWriter`), bodies as they came or in chunks, the end.
struct ClientResponseWriter {
    private var messages = HTTPMessageWriter()
    private var heads = HeadWriter()

    mutating func head(_ head: ResponseHead, allocator: ByteBufferAllocator) -> ByteBuffer {
        switch head.storage {
        case .own(let own):
            return messages.head(own, allocator: allocator)
        case .origin:
            // Not rewritten for the client: never the machine's output, but written as NIOHTTP1 would.
            return messages.head(head.converted, allocator: allocator)
        case .relayed(let relayed):
            messages.headWritten(chunked: relayed.chunked)
            return relayed.written(by: &heads, allocator: allocator)
        }
    }

    func body(_ part: ByteBuffer, allocator: ByteBufferAllocator, write: (ByteBuffer) -> Void) {
        messages.body(part, allocator: allocator, write: write)
    }

    mutating func end(_ trailers: HeaderFields?, allocator: ByteBufferAllocator) -> ByteBuffer? {
        messages.end(trailers?.storage, allocator: allocator)
    }
}
