/// Host name helpers shared by the formats.
enum DNSName {
    /// Longest name in text form without the trailing dot (RFC 1035 2.3.4: 255 bytes on the wire).
    static let maximumTextLength = 253
    static let maximumLabelLength = 63
    /// Longest name in wire form, length bytes and root label included.
    static let maximumWireLength = 255

    /// Key for comparing names from JSON answers: DNS names are case-insensitive and
    /// providers differ on the trailing dot ("a.com." in answers, "a.com" from callers).
    static func normalized(_ name: String) -> String {
        var text = name.lowercased()
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    /// Wire form (length-prefixed labels, root label last) with ASCII lowercased, so
    /// the same bytes serve as a query name and as a comparison key for wire answers.
    static func wire(fromText name: String) throws(WireError) -> [UInt8] {
        var text = Array(name.utf8)
        if text.last == UInt8(ascii: ".") { text.removeLast() }
        guard !text.isEmpty else { throw .invalidName("empty name") }
        guard text.count <= maximumTextLength else {
            throw .invalidName("name is \(text.count) bytes, the limit is \(maximumTextLength)")
        }
        var wire: [UInt8] = []
        wire.reserveCapacity(text.count + 2)
        for label in text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            guard !label.isEmpty else { throw .invalidName("empty label in '\(name)'") }
            guard label.count <= maximumLabelLength else {
                throw .invalidName("label of \(label.count) bytes, the limit is \(maximumLabelLength)")
            }
            // Printable ASCII without space: IDNs must arrive as punycode, and control
            // bytes or spaces in a host name are a caller bug, not something to send.
            guard label.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw .invalidName("'\(name)' contains a non-printable or non-ASCII byte")
            }
            wire.append(UInt8(label.count))
            wire.append(contentsOf: label.map(lowercasedASCII))
        }
        wire.append(0)
        return wire
    }

    static func lowercasedASCII(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
    }
}
