/// Allocation-free ASCII helpers for header names and list-valued fields.
package enum ASCII {
    /// `text` equals `lowercase` (which must be lower case) ignoring ASCII letter case.
    package static func equalsLowercase(_ text: String, _ lowercase: String) -> Bool {
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
        // Scanned in place over the bytes: splitting would allocate an array of slices per field,
        // and String.UTF8View index steps cost several times a pointer step on every response's
        // Connection field. `withUTF8` makes a non-contiguous string contiguous first (a native
        // one, every string on Linux, already is: no copy).
        var value = value
        value.withUTF8 { bytes in
            var index = 0
            while index < bytes.count {
                var start = index
                while index < bytes.count, bytes[index] != UInt8(ascii: ",") { index += 1 }
                var end = index
                if index < bytes.count { index += 1 }  // past the comma
                while start < end, isSpace(bytes[start]) { start += 1 }
                while start < end, isSpace(bytes[end - 1]) { end -= 1 }
                guard start < end else { continue }
                let element = UnsafeBufferPointer(rebasing: bytes[start..<end])
                let text = String(decoding: element, as: UTF8.self)
                body(element.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") } ? text.lowercased() : text)
            }
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }
}
