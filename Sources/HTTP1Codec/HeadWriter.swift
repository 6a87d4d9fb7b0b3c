import NIOCore

/// Writes the heads the proxy forwards into one buffer: the start line, the kept field lines
/// copied as they arrived (consecutive kept lines in one copy), then the fields the proxy writes
/// itself (Host, framing, Connection, Via). The framing field is the proxy's own, never the
/// peer's: what the next hop receives is framed unambiguously whatever the peer sent (RFC 9112 §6).
///
/// The last head's buffer is kept and written into again once the socket has written it (then
/// it is the only reference and `clear()` keeps its storage): no allocation per head on a
/// kept-alive connection. Heads past `reusedCapacity` are not kept.
package struct HeadWriter {
    private var lastHead: ByteBuffer?
    static let reusedCapacity = 4096

    package init() {}

    private mutating func buffer(capacity: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
        guard var buffer = lastHead.take() else { return allocator.buffer(capacity: capacity) }
        buffer.clear(minimumCapacity: capacity)
        return buffer
    }

    private mutating func keep(_ buffer: ByteBuffer) {
        if buffer.capacity <= Self.reusedCapacity { lastHead = buffer }
    }

    /// The request head for the origin: `method target HTTP/1.1`, the kept fields (minus
    /// `dropping`, e.g. a Max-Forwards the caller rewrites, and the names in `replacing`), Host,
    /// the framing field (`.contentLength(n)` writes Content-Length, also 0; `.chunked` writes
    /// Transfer-Encoding), `extraFields` in order, Via, then `replacing` (fields the proxy sets).
    package mutating func requestHead(
        _ head: HTTP1Head,
        target: String,
        host: String,
        framing: BodyFraming,
        via: String,
        extraFields: [(name: String, value: String)] = [],
        dropping: KnownField? = nil,
        replacing: [(name: String, value: String)] = [],
        allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        var out = buffer(capacity: head.bytes.readableBytes + target.utf8.count + host.utf8.count + via.utf8.count + 64, allocator: allocator)
        _ = head.bytes.withUnsafeReadableBytes { raw in
            out.writeBytes(UnsafeRawBufferPointer(rebasing: raw[head.method]))
        }
        out.writeInteger(ByteClass.sp)
        out.writeString(target)
        out.writeStaticString(" HTTP/1.1\r\n")
        writeKeptFields(Self.without(replacing, head), of: head.bytes, dropping: dropping, into: &out)
        writeField("Host", host, into: &out)
        writeFraming(framing, into: &out)
        for field in extraFields { writeField(field.name, field.value, into: &out) }
        writeField("Via", via, into: &out)
        for field in replacing { writeField(field.name, field.value, into: &out) }
        out.writeStaticString("\r\n")
        keep(out)
        return out
    }

    /// The head's fields with those named in `replaced` no longer kept (the same array when
    /// nothing is replaced).
    private static func without(_ replaced: [(name: String, value: String)], _ head: HTTP1Head) -> [FieldLine] {
        var fields = head.fields
        guard !replaced.isEmpty else { return fields }
        head.bytes.withUnsafeReadableBytes { raw in
            for index in fields.indices where fields[index].kept && replaced.contains(where: { raw.equalsIgnoringCase(fields[index].name, $0.name) }) {
                fields[index].kept = false
            }
        }
        return fields
    }

    /// The response head for the client: `HTTP/1.<minorVersion>`, the status code and reason as
    /// received, the kept fields (Content-Length among them), Transfer-Encoding when the client
    /// gets the body chunked, `connection` when given, Via, then `replacing` (a field the proxy
    /// sets: the head's own lines of that name are not copied).
    package mutating func responseHead(
        _ head: HTTP1Head,
        minorVersion: Int,
        chunked: Bool,
        connection: String?,
        via: String,
        replacing: (name: String, value: String)? = nil,
        allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        var out = buffer(capacity: head.bytes.readableBytes + via.utf8.count + 64, allocator: allocator)
        let fields = replacing.map { Self.without([$0], head) } ?? head.fields
        out.writeStaticString(minorVersion == 0 ? "HTTP/1.0 " : "HTTP/1.1 ")
        out.writeString(String(head.status))
        out.writeInteger(ByteClass.sp)
        _ = head.bytes.withUnsafeReadableBytes { raw in
            out.writeBytes(UnsafeRawBufferPointer(rebasing: raw[head.reasonPhrase]))
        }
        out.writeStaticString("\r\n")
        writeKeptFields(fields, of: head.bytes, dropping: nil, into: &out)
        if chunked { out.writeStaticString("Transfer-Encoding: chunked\r\n") }
        if let connection { writeField("Connection", connection, into: &out) }
        writeField("Via", via, into: &out)
        if let replacing { writeField(replacing.name, replacing.value, into: &out) }
        out.writeStaticString("\r\n")
        keep(out)
        return out
    }

    /// Copies the kept lines; a run of consecutive kept lines is one copy.
    private func writeKeptFields(_ fields: [FieldLine], of bytes: ByteBuffer, dropping: KnownField?, into out: inout ByteBuffer) {
        bytes.withUnsafeReadableBytes { raw in
            var run: Range<Int>?
            for field in fields {
                guard field.kept, dropping == nil || field.known != dropping else {
                    if let pending = run { out.writeBytes(UnsafeRawBufferPointer(rebasing: raw[pending])) }
                    run = nil
                    continue
                }
                if let pending = run, pending.upperBound == field.line.lowerBound {
                    run = pending.lowerBound..<field.line.upperBound
                } else {
                    if let pending = run { out.writeBytes(UnsafeRawBufferPointer(rebasing: raw[pending])) }
                    run = field.line
                }
            }
            if let pending = run { out.writeBytes(UnsafeRawBufferPointer(rebasing: raw[pending])) }
        }
    }

    private func writeFraming(_ framing: BodyFraming, into out: inout ByteBuffer) {
        switch framing {
        case .contentLength(let length):
            out.writeStaticString("Content-Length: ")
            out.writeString(String(length))
            out.writeStaticString("\r\n")
        case .chunked:
            out.writeStaticString("Transfer-Encoding: chunked\r\n")
        case .none, .untilClose, .tunnel:
            break
        }
    }

    private func writeField(_ name: String, _ value: String, into out: inout ByteBuffer) {
        out.writeString(name)
        out.writeStaticString(": ")
        out.writeString(value)
        out.writeStaticString("\r\n")
    }
}
