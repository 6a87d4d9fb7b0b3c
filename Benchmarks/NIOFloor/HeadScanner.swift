// The head scanner of the --bytes floor (ByteRelay.swift says what it checks and leaves out).
/// Offsets of one scanned head's parts, relative to the start of the head.
struct ScannedHead {
    struct Field {
        var name: Range<Int>
        var value: Range<Int>
    }

    /// The three parts of the start line.
    var first: Range<Int> = 0..<0
    var second: Range<Int> = 0..<0
    var third: Range<Int> = 0..<0
    /// Kept across heads so a kept-alive connection scans into the same storage.
    var fields: [Field] = []
    var contentLength: Int?
    var close = false
    /// The status code of a response head.
    var status = 0
    /// Bytes up to and including the empty line.
    var length = 0

    enum Outcome { case incomplete, complete, invalid }

    static let maxLength = 64 * 1024

    static let tchar: [Bool] = (0..<256).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(UInt8(byte))
        }
    }

    /// Scans `bytes` for one complete head. `request`: the start line is method SP target SP
    /// version (else version SP status SP reason).
    mutating func scan(_ bytes: UnsafeRawBufferPointer, request: Bool) -> Outcome {
        let outcome = scanHead(bytes, request: request)
        if outcome == .incomplete && bytes.count > Self.maxLength { return .invalid }
        return outcome
    }

    private mutating func scanHead(_ bytes: UnsafeRawBufferPointer, request: Bool) -> Outcome {
        fields.removeAll(keepingCapacity: true)
        contentLength = nil
        close = false
        let count = bytes.count
        // The start line: two spaces (a reason may hold more), then CRLF.
        var i = 0
        var partStart = 0
        var part = 0
        while i < count {
            let byte = bytes[i]
            if byte == UInt8(ascii: "\r") { break }
            if byte == UInt8(ascii: " ") && part < 2 {
                if part == 0 { first = partStart..<i } else { second = partStart..<i }
                part += 1
                partStart = i + 1
            } else if (byte < 0x20 && byte != UInt8(ascii: "\t")) || byte == 0x7F {
                return .invalid
            } else if request && part == 0 && !Self.tchar[Int(byte)] {
                return .invalid
            }
            i += 1
        }
        guard i + 1 < count else { return .incomplete }
        guard part == 2, bytes[i + 1] == UInt8(ascii: "\n") else { return .invalid }
        third = partStart..<i
        if request {
            guard !first.isEmpty, !second.isEmpty, Self.isVersion(bytes, third) else { return .invalid }
        } else {
            guard Self.isVersion(bytes, first), second.count == 3 else { return .invalid }
            status = 0
            for j in second {
                let digit = Int(bytes[j]) &- 48
                guard digit >= 0 && digit <= 9 else { return .invalid }
                status = status * 10 + digit
            }
        }
        i += 2
        // Field lines up to the empty line.
        while true {
            guard i + 1 < count else { return .incomplete }
            if bytes[i] == UInt8(ascii: "\r") {
                guard bytes[i + 1] == UInt8(ascii: "\n") else { return .invalid }
                length = i + 2
                return .complete
            }
            let nameStart = i
            while i < count, Self.tchar[Int(bytes[i])] { i += 1 }
            guard i < count else { return .incomplete }
            guard bytes[i] == UInt8(ascii: ":"), i > nameStart else { return .invalid }
            let name = nameStart..<i
            i += 1
            while i < count, bytes[i] == UInt8(ascii: " ") || bytes[i] == UInt8(ascii: "\t") { i += 1 }
            let valueStart = i
            var valueEnd = i
            while i < count {
                let byte = bytes[i]
                if byte == UInt8(ascii: "\r") { break }
                if (byte < 0x20 && byte != UInt8(ascii: "\t")) || byte == 0x7F { return .invalid }
                i += 1
                if byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") { valueEnd = i }
            }
            guard i + 1 < count else { return .incomplete }
            guard bytes[i + 1] == UInt8(ascii: "\n") else { return .invalid }
            i += 2
            let value = valueStart..<valueEnd
            switch name.count {
            case 14 where Self.equals(bytes, name, "content-length"):
                guard !value.isEmpty else { return .invalid }
                var number = 0
                for j in value {
                    let digit = Int(bytes[j]) &- 48
                    guard digit >= 0 && digit <= 9, number < 1 << 40 else { return .invalid }
                    number = number * 10 + digit
                }
                if let earlier = contentLength, earlier != number { return .invalid }
                contentLength = number
            case 17 where Self.equals(bytes, name, "transfer-encoding"):
                return .invalid
            case 10 where Self.equals(bytes, name, "connection"):
                Self.forEachToken(bytes, value) { token in
                    if Self.equals(bytes, token, "close") { close = true }
                }
            default:
                break
            }
            fields.append(Field(name: name, value: value))
        }
    }

    /// The method is exactly HEAD (methods are case-sensitive).
    static func isHEAD(_ bytes: UnsafeRawBufferPointer, _ method: Range<Int>) -> Bool {
        method.count == 4 && bytes[method.lowerBound] == UInt8(ascii: "H")
            && bytes[method.lowerBound + 1] == UInt8(ascii: "E") && bytes[method.lowerBound + 2] == UInt8(ascii: "A")
            && bytes[method.lowerBound + 3] == UInt8(ascii: "D")
    }

    static func isVersion(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        range.count == 8 && equals(bytes, range.lowerBound..<range.lowerBound + 7, "http/1.")
            && (bytes[range.lowerBound + 7] == UInt8(ascii: "0") || bytes[range.lowerBound + 7] == UInt8(ascii: "1"))
    }

    /// The comma-separated elements of a list value, without surrounding spaces.
    static func forEachToken(_ bytes: UnsafeRawBufferPointer, _ value: Range<Int>, _ body: (Range<Int>) -> Void) {
        var start = value.lowerBound
        while start < value.upperBound {
            var end = start
            while end < value.upperBound, bytes[end] != UInt8(ascii: ",") { end += 1 }
            var first = start
            var last = end
            while first < last, bytes[first] == UInt8(ascii: " ") || bytes[first] == UInt8(ascii: "\t") { first += 1 }
            while last > first, bytes[last - 1] == UInt8(ascii: " ") || bytes[last - 1] == UInt8(ascii: "\t") { last -= 1 }
            if first < last { body(first..<last) }
            start = end + 1
        }
    }

    /// ASCII case-insensitive comparison of a range with a lowercase name (only A-Z fold).
    static func equals(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ lowercase: StaticString) -> Bool {
        guard range.count == lowercase.utf8CodeUnitCount else { return false }
        let name = lowercase.utf8Start
        for k in 0..<range.count {
            let byte = bytes[range.lowerBound + k]
            let folded = byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
            if folded != name[k] { return false }
        }
        return true
    }

    /// Hop-by-hop fields a proxy never forwards, and Host, which it writes itself.
    static func dropped(_ bytes: UnsafeRawBufferPointer, _ name: Range<Int>) -> Bool {
        switch name.count {
        case 2: equals(bytes, name, "te")
        case 4: equals(bytes, name, "host")
        case 7: equals(bytes, name, "upgrade") || equals(bytes, name, "trailer")
        case 10: equals(bytes, name, "connection") || equals(bytes, name, "keep-alive")
        case 16: equals(bytes, name, "proxy-connection")
        case 18: equals(bytes, name, "proxy-authenticate")
        case 19: equals(bytes, name, "proxy-authorization")
        default: false
        }
    }

    /// The authority of an absolute-form `http://` target: host characters, then an optional
    /// numeric port; nil when the target is anything else.
    static func authority(_ bytes: UnsafeRawBufferPointer, _ target: Range<Int>) -> Range<Int>? {
        guard target.count > 7, equals(bytes, target.lowerBound..<target.lowerBound + 7, "http://") else { return nil }
        let start = target.lowerBound + 7
        var end = start
        var colon: Int?
        while end < target.upperBound, bytes[end] != UInt8(ascii: "/") {
            let byte = bytes[end]
            if byte == UInt8(ascii: ":") {
                guard colon == nil else { return nil }
                colon = end
            } else if colon != nil {
                guard byte &- UInt8(ascii: "0") < 10 else { return nil }
            } else {
                guard tchar[Int(byte)], byte != UInt8(ascii: "*") else { return nil }
            }
            end += 1
        }
        guard end > start, colon != start, colon.map({ $0 + 1 < end }) ?? true else { return nil }
        return start..<end
    }
}
