/// A JSON reader for provider answers and the static list (RFC 8259), in place of Foundation's
/// JSONSerialization (which would link ICU into the binary).
///
/// It yields the same loose tree the wire parsers walk: `[String: Any]`, `[Any]`, `String`,
/// `Int` (an integer literal that fits), `Double` (any other number), `Bool` and `JSONNull`.
/// The input is an attacker's bytes: nesting is bounded, every index is checked, and an error says
/// where (line and column) without echoing the text.
enum JSONReader {
    /// Deeper documents are refused before they cost stack; no provider nests beyond 5.
    static let maximumDepth = 128

    struct Failure: Error, Equatable, CustomStringConvertible {
        var problem: String
        var line: Int
        var column: Int
        var description: String { "\(problem) at line \(line), column \(column)" }
    }

    /// The one value in `bytes` (surrounding white space allowed, nothing else).
    static func parse(_ bytes: [UInt8]) throws(Failure) -> Any {
        try bytes.withUnsafeBufferPointer { (buffer) throws(Failure) -> Any in
            var reader = Reader(bytes: buffer)
            reader.skipSpace()
            let value = try reader.value(depth: 0)
            reader.skipSpace()
            guard reader.index == buffer.count else { throw reader.failure("unexpected text after the value") }
            return value
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        func failure(_ problem: String) -> Failure {
            let end = min(index, bytes.count)
            var line = 1
            var lineStart = 0
            for position in 0..<end where bytes[position] == UInt8(ascii: "\n") {
                line += 1
                lineStart = position + 1
            }
            return Failure(problem: problem, line: line, column: end - lineStart + 1)
        }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) throws(Failure) -> Any {
            guard depth < JSONReader.maximumDepth else { throw failure("nested deeper than \(JSONReader.maximumDepth) levels") }
            guard index < bytes.count else { throw failure("the document ends where a value should start") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return try string()
            case UInt8(ascii: "t"): try literal("true"); return true
            case UInt8(ascii: "f"): try literal("false"); return false
            case UInt8(ascii: "n"): try literal("null"); return JSONNull()
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw failure("unexpected character where a value should start")
            }
        }

        mutating func literal(_ word: StaticString) throws(Failure) {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count,
                  (0..<count).allSatisfy({ bytes[index + $0] == word.utf8Start[$0] }) else {
                throw failure("unexpected character where a value should start")
            }
            index += count
        }

        mutating func object(depth: Int) throws(Failure) -> [String: Any] {
            index += 1  // {
            var result: [String: Any] = [:]
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return result }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a quoted key") }
                let key = try string()
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':' after a key") }
                index += 1
                skipSpace()
                result[key] = try value(depth: depth + 1)
                skipSpace()
                guard index < bytes.count else { throw failure("the document ends inside an object") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return result }
                throw failure("expected ',' or '}' in an object")
            }
        }

        mutating func array(depth: Int) throws(Failure) -> [Any] {
            index += 1  // [
            var result: [Any] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return result }
            while true {
                skipSpace()
                result.append(try value(depth: depth + 1))
                skipSpace()
                guard index < bytes.count else { throw failure("the document ends inside an array") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return result }
                throw failure("expected ',' or ']' in an array")
            }
        }

        mutating func number() throws(Failure) -> Any {
            let start = index
            func digits(_ reader: inout Reader) -> Int {
                let from = reader.index
                while reader.index < reader.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(reader.bytes[reader.index]) {
                    reader.index += 1
                }
                return reader.index - from
            }
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            let integerStart = index
            let integerDigits = digits(&self)
            guard integerDigits > 0 else { throw failure("a number needs digits") }
            guard integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { throw failure("a number cannot start with 0") }
            var isInteger = true
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                isInteger = false
                guard digits(&self) > 0 else { throw failure("a number needs digits after '.'") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                isInteger = false
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw failure("a number needs digits in its exponent") }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            if isInteger, let integer = Int(text) { return integer }
            guard let double = Double(text), double.isFinite else {
                index = start
                throw failure("a number out of range")
            }
            return double
        }

        mutating func string() throws(Failure) -> String {
            index += 1  // "
            var utf8: [UInt8] = []
            while true {
                guard index < bytes.count else { throw failure("the document ends inside a string") }
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    guard let text = String(validating: utf8, as: UTF8.self) else { throw failure("a string that is not valid UTF-8") }
                    return text
                case UInt8(ascii: "\\"):
                    index += 1
                    try escape(into: &utf8)
                case 0..<0x20:
                    throw failure("a control character inside a string")
                default:
                    utf8.append(byte)
                    index += 1
                }
            }
        }

        /// One escape after the backslash, appended as UTF-8.
        mutating func escape(into utf8: inout [UInt8]) throws(Failure) {
            guard index < bytes.count else { throw failure("the document ends inside a string") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(byte)
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw failure("a lone UTF-16 surrogate in a string")
                    }
                    index += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw failure("a lone UTF-16 surrogate in a string") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw failure("a lone UTF-16 surrogate in a string") }
                utf8.append(contentsOf: String(Character(unicode)).utf8)
            default:
                index -= 1
                throw failure("an unknown escape in a string")
            }
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard bytes.count - index >= 4 else { throw failure("a \\u escape needs four hex digits") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw failure("a \\u escape needs four hex digits")
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }
    }
}

/// JSON's `null` in a `JSONReader` tree (it is neither a string nor a number to the accessors).
struct JSONNull: Equatable {}
