/// What a TLS ClientHello revealed, parsed from the raw bytes a server received.
public struct ClientHelloSummary: Sendable, Hashable {
    /// The SNI host name, or nil when the client sent no server_name extension.
    public var serverName: String?
    /// The ALPN protocols offered, in order.
    public var offeredApplicationProtocols: [String]
    /// The client offered to resume: a pre_shared_key (TLS 1.3) or a non-empty session ticket (TLS 1.2).
    public var offeredSessionResumption: Bool

    /// Parses the ClientHello at the start of `bytes` (TLS records as received).
    /// - Returns: nil if more bytes are needed; throws if the bytes are not a ClientHello.
    public static func parse(_ bytes: [UInt8]) throws(TestCAError) -> ClientHelloSummary? {
        // Reassemble the handshake message from consecutive handshake records.
        var handshake: [UInt8] = []
        var offset = 0
        while true {
            if handshake.count >= 4 {
                let length = Int(handshake[1]) << 16 | Int(handshake[2]) << 8 | Int(handshake[3])
                if handshake.count >= 4 + length { break }
            }
            guard bytes.count >= offset + 5 else { return nil }
            guard bytes[offset] == 22 else { throw TestCAError("not a TLS handshake record") }
            let recordLength = Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4])
            guard bytes.count >= offset + 5 + recordLength else { return nil }
            handshake += bytes[(offset + 5)..<(offset + 5 + recordLength)]
            offset += 5 + recordLength
        }
        guard handshake[0] == 1 else { throw TestCAError("not a ClientHello") }

        var reader = Reader(bytes: handshake, offset: 4)
        try reader.skip(2 + 32)  // legacy_version, random
        try reader.skip(Int(try reader.u8()))  // session id
        try reader.skip(Int(try reader.u16()))  // cipher suites
        try reader.skip(Int(try reader.u8()))  // compression methods

        var summary = ClientHelloSummary(serverName: nil, offeredApplicationProtocols: [], offeredSessionResumption: false)
        guard reader.remaining > 0 else { return summary }
        let extensionsEnd = reader.offset + Int(try reader.u16())
        while reader.offset < extensionsEnd {
            let type = try reader.u16()
            let length = Int(try reader.u16())
            let body = try reader.bytes(length)
            var ext = Reader(bytes: body, offset: 0)
            switch type {
            case 0:  // server_name
                let listEnd = 2 + Int(try ext.u16())
                while ext.offset < listEnd {
                    let nameType = try ext.u8()
                    let name = try ext.bytes(Int(try ext.u16()))
                    if nameType == 0 { summary.serverName = String(decoding: name, as: UTF8.self) }
                }
            case 16:  // application_layer_protocol_negotiation
                let listEnd = 2 + Int(try ext.u16())
                while ext.offset < listEnd {
                    let name = try ext.bytes(Int(try ext.u8()))
                    summary.offeredApplicationProtocols.append(String(decoding: name, as: UTF8.self))
                }
            case 35:  // session_ticket
                if length > 0 { summary.offeredSessionResumption = true }
            case 41:  // pre_shared_key
                summary.offeredSessionResumption = true
            default:
                break
            }
        }
        return summary
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset: Int
        var remaining: Int { self.bytes.count - self.offset }

        mutating func u8() throws(TestCAError) -> UInt8 {
            guard self.remaining >= 1 else { throw TestCAError("truncated ClientHello") }
            defer { self.offset += 1 }
            return self.bytes[self.offset]
        }

        mutating func u16() throws(TestCAError) -> UInt16 {
            UInt16(try self.u8()) << 8 | UInt16(try self.u8())
        }

        mutating func bytes(_ count: Int) throws(TestCAError) -> [UInt8] {
            guard self.remaining >= count else { throw TestCAError("truncated ClientHello") }
            defer { self.offset += count }
            return Array(self.bytes[self.offset..<(self.offset + count)])
        }

        mutating func skip(_ count: Int) throws(TestCAError) {
            _ = try self.bytes(count)
        }
    }
}
