/// Bounds-checked reads over an untrusted DNS message.
///
/// Every read checks the remaining length and throws `.malformedMessage` instead of
/// trapping, so a hostile or cut-off answer can only ever produce an error.
struct DNSWireReader {
    /// At most this many compression pointers per name (RFC 1035 sets no limit; real
    /// names need a handful). With the backward-only rule below loops are already
    /// impossible; this also bounds the work per name.
    static let maximumPointerJumps = 64

    let bytes: [UInt8]
    private(set) var offset: Int = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var remaining: Int { bytes.count - offset }

    mutating func readUInt8(_ what: @autoclosure () -> String) throws(WireError) -> UInt8 {
        guard offset < bytes.count else { throw .malformedMessage("message ends inside \(what())") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16(_ what: @autoclosure () -> String) throws(WireError) -> UInt16 {
        guard remaining >= 2 else { throw .malformedMessage("message ends inside \(what())") }
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    mutating func readUInt32(_ what: @autoclosure () -> String) throws(WireError) -> UInt32 {
        guard remaining >= 4 else { throw .malformedMessage("message ends inside \(what())") }
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16
            | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    mutating func readBytes(_ count: Int, _ what: @autoclosure () -> String) throws(WireError) -> ArraySlice<UInt8> {
        guard count >= 0, remaining >= count else { throw .malformedMessage("message ends inside \(what())") }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func skip(_ count: Int, _ what: @autoclosure () -> String) throws(WireError) {
        guard count >= 0, remaining >= count else { throw .malformedMessage("message ends inside \(what())") }
        offset += count
    }

    /// Reads a possibly compressed name at the current offset and moves past it.
    /// Returns the name in lowercased wire form (the comparison key for chains).
    mutating func readName(_ what: @autoclosure () -> String) throws(WireError) -> [UInt8] {
        let (name, end) = try Self.name(in: bytes, at: offset, what())
        offset = end
        return name
    }

    /// Decodes the name starting at `start`; `end` is where the name's in-place bytes
    /// stop (after the first pointer or the root label).
    ///
    /// Pointers must point strictly before the start of the label run that contains
    /// them: each jump moves strictly backwards, so a loop is impossible and the walk
    /// ends after at most `start` jumps, further capped at `maximumPointerJumps`.
    static func name(in bytes: [UInt8], at start: Int, _ what: @autoclosure () -> String) throws(WireError) -> (name: [UInt8], end: Int) {
        var name: [UInt8] = []
        var position = start
        var runStart = start
        var end: Int?
        var jumps = 0
        while true {
            guard position >= 0, position < bytes.count else {
                throw .malformedMessage("message ends inside \(what())")
            }
            let length = bytes[position]
            switch length & 0xC0 {
            case 0x00:
                if length == 0 {
                    name.append(0)
                    return (name, end ?? position + 1)
                }
                let labelEnd = position + 1 + Int(length)
                guard labelEnd <= bytes.count else {
                    throw .malformedMessage("message ends inside a label of \(what())")
                }
                // +1 for the root label still to come.
                guard name.count + 1 + Int(length) + 1 <= DNSName.maximumWireLength else {
                    throw .malformedMessage("\(what()) is longer than \(DNSName.maximumWireLength) bytes")
                }
                name.append(length)
                for byte in bytes[(position + 1)..<labelEnd] { name.append(DNSName.lowercasedASCII(byte)) }
                position = labelEnd
            case 0xC0:
                guard position + 1 < bytes.count else {
                    throw .malformedMessage("message ends inside a pointer in \(what())")
                }
                let target = Int(length & 0x3F) << 8 | Int(bytes[position + 1])
                guard target < runStart else {
                    throw .malformedMessage("compression pointer in \(what()) does not point backwards")
                }
                jumps += 1
                guard jumps <= maximumPointerJumps else {
                    throw .malformedMessage("more than \(maximumPointerJumps) compression pointers in \(what())")
                }
                if end == nil { end = position + 2 }
                position = target
                runStart = target
            default:
                // 0x40 (extended label types, RFC 6891 deprecated them) and 0x80 are not names.
                throw .malformedMessage("unsupported label type 0x\(String(length & 0xC0, radix: 16)) in \(what())")
            }
        }
    }
}
