/// Byte classes of RFC 9110 §5.6 and RFC 9112: each a test of one byte without a branch chain
/// or a memory table.
enum ByteClass {
    /// A-Z folded to a-z; every other byte as it is.
    @inline(__always) static func lowered(_ byte: UInt8) -> UInt8 {
        byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
    }

    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09

    // The classes are tests on the byte itself, not tables: a `static let` table is a lazily
    // initialised global, and every use from a scanner's inner loop called `swift_once` (1.1 % of
    // the proxy's CPU per request in `perf record`).

    /// tchar (RFC 9110 §5.6.2): the bytes of a token (methods, field names, transfer codings):
    /// ALPHA, DIGIT and `!#$%&'*+-.^_`|~`, as two 64-bit masks over ASCII (the test suite checks
    /// them against that definition).
    static let tcharLow: UInt64 = 0x03FF_6CFA_0000_0000
    static let tcharHigh: UInt64 = 0x57FF_FFFF_C7FF_FFFE

    @inline(__always) static func isToken(_ byte: UInt8) -> Bool {
        byte < 64 ? (tcharLow >> UInt64(byte)) & 1 != 0 : byte < 128 ? (tcharHigh >> UInt64(byte &- 64)) & 1 != 0 : false
    }

    /// field-vchar plus the spaces inside a value (RFC 9110 §5.5): VCHAR, obs-text, SP and HTAB.
    /// Everything else (NUL, CR, LF and the other controls, DEL) is refused in a field value.
    @inline(__always) static func isFieldByte(_ byte: UInt8) -> Bool {
        byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
    }

    /// The bytes of a request-target: visible ASCII. RFC 9112 §3.2 builds every form from URI
    /// characters (RFC 3986 §2), which leave out `"` `<` `>` `\` `^` `` ` `` `{` `|` `}`; clients send
    /// those unencoded all the same and today's parser (llhttp) takes them, so they stay accepted
    /// (RequestTarget judges the form). Spaces, controls and non-ASCII are refused.
    @inline(__always) static func isTargetByte(_ byte: UInt8) -> Bool {
        byte &- 0x21 < 0x5E
    }

    @inline(__always) static func isSpace(_ byte: UInt8) -> Bool { byte == sp || byte == htab }

    /// The value of a hex digit, or nil.
    @inline(__always) static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte &- UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte &- UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte &- UInt8(ascii: "A")) + 10
        default: nil
        }
    }
}

extension UnsafeRawBufferPointer {
    /// The bytes in `range` equal `lowercase` (a lowercase ASCII literal), folding A-Z only.
    func equalsLowercase(_ range: Range<Int>, _ lowercase: StaticString) -> Bool {
        guard range.count == lowercase.utf8CodeUnitCount else { return false }
        let name = lowercase.utf8Start
        var k = 0
        for index in range {
            let byte = self[index]
            if ByteClass.lowered(byte) != name[k] { return false }
            k += 1
        }
        return true
    }

    /// Two ranges hold the same bytes, ignoring ASCII letter case.
    func equalsIgnoringCase(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        guard a.count == b.count else { return false }
        var j = b.lowerBound
        for i in a {
            let x = self[i]
            let y = self[j]
            if x != y, ByteClass.lowered(x) != ByteClass.lowered(y) { return false }
            j += 1
        }
        return true
    }

    /// The bytes in `range` spell `text`, ignoring ASCII letter case.
    func equalsIgnoringCase(_ range: Range<Int>, _ text: String) -> Bool {
        guard range.count == text.utf8.count else { return false }
        for (index, y) in zip(range, text.utf8) {
            let x = self[index]
            if x != y, ByteClass.lowered(x) != ByteClass.lowered(y) { return false }
        }
        return true
    }

    /// The comma-separated elements of a list value (RFC 9110 §5.6.1) without the spaces around
    /// them; empty elements are skipped.
    func forEachListElement(_ value: Range<Int>, _ body: (Range<Int>) -> Void) {
        var start = value.lowerBound
        while start < value.upperBound {
            var end = start
            while end < value.upperBound, self[end] != UInt8(ascii: ",") { end += 1 }
            var first = start
            var last = end
            while first < last, ByteClass.isSpace(self[first]) { first += 1 }
            while last > first, ByteClass.isSpace(self[last - 1]) { last -= 1 }
            if first < last { body(first..<last) }
            start = end + 1
        }
    }

    /// The bytes in `range` equal `literal` exactly (case-sensitive).
    func equals(_ range: Range<Int>, _ literal: StaticString) -> Bool {
        guard range.count == literal.utf8CodeUnitCount else { return false }
        let bytes = literal.utf8Start
        var k = 0
        for index in range {
            if self[index] != bytes[k] { return false }
            k += 1
        }
        return true
    }

    /// The bytes in `range` as text.
    func string(_ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: self[range]), as: UTF8.self)
    }
}

/// Text from a peer as it may appear in an error reason: at most `limit` bytes, printable ASCII
/// only (other bytes, and `<`, `>`, `&`, `"`, `'` and `\`, as `\xHH`), then "..." when cut.
/// ProxyKit's `ProxyError.sanitized` is this function, so every reason reads the same.
package func sanitized(_ text: String, limit: Int) -> String {
    var out = ""
    var count = 0
    let hex = Array("0123456789ABCDEF".utf8)
    for byte in text.utf8 {
        if count >= limit {
            out += "..."
            break
        }
        switch byte {
        case 0x20...0x7E where !"<>&\"'\\".utf8.contains(byte):
            out.unicodeScalars.append(Unicode.Scalar(byte))
        default:
            out += "\\x"
            out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
            out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0xF)]))
        }
        count += 1
    }
    return out
}
