/// Allocation-free ASCII helpers for header names and list-valued fields.
enum ASCII {
    /// `text` equals `lowercase` (which must be lower case) ignoring ASCII letter case.
    static func equalsLowercase(_ text: String, _ lowercase: String) -> Bool {
        guard text.utf8.count == lowercase.utf8.count else { return false }
        let fast = text.utf8.withContiguousStorageIfAvailable { a in
            lowercase.utf8.withContiguousStorageIfAvailable { b in equalsLowercase(a, b) }
        }
        if let fast, let result = fast { return result }
        return equalsLowercase(Array(text.utf8), Array(lowercase.utf8))
    }

    private static func equalsLowercase(_ a: some RandomAccessCollection<UInt8>, _ b: some RandomAccessCollection<UInt8>) -> Bool {
        var i = a.startIndex
        var j = b.startIndex
        while i != a.endIndex {
            let x = a[i]
            let y = b[j]
            if x != y {
                guard x >= UInt8(ascii: "A"), x <= UInt8(ascii: "Z"), x | 0x20 == y else { return false }
            }
            a.formIndex(after: &i)
            b.formIndex(after: &j)
        }
        return true
    }

    /// Calls `body` with each element of a comma-separated list (RFC 9110 §5.6.1), trimmed of spaces
    /// and tabs and lowercased; empty elements are skipped.
    static func forEachListElement(_ value: String, _ body: (String) -> Void) {
        // Scanned in place over the bytes (a native string's are contiguous): splitting would
        // allocate an array of slices per field, and String.UTF8View index steps cost several
        // times a pointer step on every response's Connection field.
        let done: Void? = value.utf8.withContiguousStorageIfAvailable { bytes in
            forEachListElement(bytes, body)
        }
        if done == nil { forEachListElementSlowly(value, body) }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    private static func forEachListElement(_ bytes: UnsafeBufferPointer<UInt8>, _ body: (String) -> Void) {
        var index = 0
        let count = bytes.count
        while index < count {
            var start = index
            while index < count, bytes[index] != UInt8(ascii: ",") { index += 1 }
            var end = index
            if index < count { index += 1 }  // past the comma
            while start < end, isSpace(bytes[start]) { start += 1 }
            while start < end, isSpace(bytes[end - 1]) { end -= 1 }
            guard start < end else { continue }
            let element = UnsafeBufferPointer(rebasing: bytes[start..<end])
            var hasUpper = false
            var isASCII = true
            for byte in element {
                if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { hasUpper = true }
                if byte >= 0x80 { isASCII = false }
            }
            if !hasUpper {
                body(String(decoding: element, as: UTF8.self))
            } else if isASCII {
                body(String(unsafeUninitializedCapacity: element.count) { out in
                    for (i, byte) in element.enumerated() {
                        out[i] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
                    }
                    return element.count
                })
            } else {
                // Unicode case mapping for the rare element that has both (as before).
                body(String(decoding: element, as: UTF8.self).lowercased())
            }
        }
    }

    /// The same over a string without contiguous UTF-8 (a bridged or foreign one).
    static func forEachListElementSlowly(_ value: String, _ body: (String) -> Void) {
        let utf8 = value.utf8
        var index = utf8.startIndex
        while index < utf8.endIndex {
            var start = index
            while index < utf8.endIndex, utf8[index] != UInt8(ascii: ",") { utf8.formIndex(after: &index) }
            var end = index
            if index < utf8.endIndex { utf8.formIndex(after: &index) }  // past the comma
            while start < end, utf8[start] == UInt8(ascii: " ") || utf8[start] == UInt8(ascii: "\t") {
                utf8.formIndex(after: &start)
            }
            while start < end {
                let last = utf8.index(before: end)
                guard utf8[last] == UInt8(ascii: " ") || utf8[last] == UInt8(ascii: "\t") else { break }
                end = last
            }
            guard start < end else { continue }
            let trimmed = Substring(utf8[start..<end])
            body(trimmed.utf8.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") } ? trimmed.lowercased() : String(trimmed))
        }
    }
}
