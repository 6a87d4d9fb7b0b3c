/// Reads the server_name of a TLS ClientHello from the raw bytes of a connection: TLS records of
/// type handshake (22), whose fragments are joined (a ClientHello may span several records, and
/// each record several TCP segments) until the handshake message is complete. Bounded: a
/// handshake message longer than `TransparentPeek.limit` is `.tooLarge` as soon as its length is
/// read, without waiting for its bytes.
enum ClientHelloParser {
    static let recordHeader = 5
    /// TLS records carry at most 2^14 bytes of plaintext (RFC 8446 5.1).
    static let maxRecord = 1 << 14

    static func parse(_ bytes: [UInt8]) -> TransparentPeek {
        // Join the handshake fragments of the records received so far.
        var handshake: [UInt8] = []
        var offset = 0
        var needed: Int?
        while offset < bytes.count {
            guard bytes.count - offset >= recordHeader else { return .needMore }
            guard bytes[offset] == 0x16 else {
                return .malformed("record of type \(bytes[offset]) before the ClientHello was complete")
            }
            guard bytes[offset + 1] == 0x03, bytes[offset + 2] <= 0x04 else {
                return .malformed("record version \(bytes[offset + 1]).\(bytes[offset + 2]) is not TLS")
            }
            let length = Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4])
            guard length > 0, length <= maxRecord else { return .malformed("record length \(length)") }
            let available = min(length, bytes.count - offset - recordHeader)
            handshake += bytes[(offset + recordHeader)..<(offset + recordHeader + available)]
            if needed == nil, handshake.count >= 4 {
                guard handshake[0] == 1 else { return .malformed("handshake type \(handshake[0]) is not a ClientHello") }
                let body = Int(handshake[1]) << 16 | Int(handshake[2]) << 8 | Int(handshake[3])
                guard body + 4 <= TransparentPeek.limit else { return .tooLarge }
                needed = body + 4
            }
            if let needed, handshake.count >= needed {
                return serverName(ofHello: handshake[4..<needed])
            }
            guard available == length else { return .needMore }
            offset += recordHeader + length
        }
        return .needMore
    }

    /// The server_name extension's host_name in a complete ClientHello body (RFC 8446 4.1.2,
    /// RFC 6066 3); any length that overruns its enclosure is malformed.
    static func serverName(ofHello body: ArraySlice<UInt8>) -> TransparentPeek {
        var reader = Reader(bytes: body)
        guard reader.skip(2 + 32) else { return .malformed("ClientHello shorter than its version and random") }
        guard let session = reader.vector(lengthBytes: 1), session.count <= 32 else { return .malformed("bad session id") }
        guard let suites = reader.vector(lengthBytes: 2), !suites.isEmpty, suites.count % 2 == 0 else { return .malformed("bad cipher suites") }
        guard let compression = reader.vector(lengthBytes: 1), !compression.isEmpty else { return .malformed("bad compression methods") }
        if reader.isAtEnd { return .tls(serverName: nil) }
        guard let extensions = reader.vector(lengthBytes: 2), reader.isAtEnd else { return .malformed("bad extensions block") }
        var list = Reader(bytes: extensions)
        var name: String?
        var seen = false
        while !list.isAtEnd {
            guard let type = list.integer(2), let data = list.vector(lengthBytes: 2) else { return .malformed("bad extension") }
            guard type == 0 else { continue }
            guard !seen else { return .malformed("two server_name extensions") }
            seen = true
            var names = Reader(bytes: data)
            guard let entries = names.vector(lengthBytes: 2), names.isAtEnd else { return .malformed("bad server_name list") }
            var entry = Reader(bytes: entries)
            while !entry.isAtEnd {
                guard let kind = entry.integer(1), let host = entry.vector(lengthBytes: 2) else { return .malformed("bad server_name entry") }
                if kind == 0, name == nil { name = TransparentPeek.hostName(host) }
            }
        }
        return .tls(serverName: name)
    }

    /// Big-endian reads that never pass the end of their slice.
    struct Reader {
        var bytes: ArraySlice<UInt8>

        var isAtEnd: Bool { bytes.isEmpty }

        mutating func skip(_ count: Int) -> Bool {
            guard bytes.count >= count else { return false }
            bytes = bytes.dropFirst(count)
            return true
        }

        mutating func integer(_ size: Int) -> Int? {
            guard bytes.count >= size else { return nil }
            let value = bytes.prefix(size).reduce(0) { $0 << 8 | Int($1) }
            bytes = bytes.dropFirst(size)
            return value
        }

        mutating func vector(lengthBytes: Int) -> ArraySlice<UInt8>? {
            guard let length = integer(lengthBytes), bytes.count >= length else { return nil }
            let value = bytes.prefix(length)
            bytes = bytes.dropFirst(length)
            return value
        }
    }
}
