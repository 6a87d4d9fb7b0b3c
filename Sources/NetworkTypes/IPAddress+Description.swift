extension IPAddress: CustomStringConvertible {
    /// Canonical text: dotted quad for IPv4, RFC 5952 for IPv6 (lowercase hex,
    /// no leading zeros, the longest run of two or more zero groups shortened
    /// to "::" - the first one on a tie - and IPv4-mapped addresses written as
    /// `::ffff:a.b.c.d`). Canonical so log lines and verdicts compare as text.
    public var description: String {
        if isIPv4 {
            return bytes.map(String.init).joined(separator: ".")
        }
        if let v4 = unmappedIPv4 {
            return "::ffff:" + v4.description
        }
        var groups: [UInt16] = []
        groups.reserveCapacity(8)
        for i in stride(from: 0, to: 16, by: 2) {
            groups.append(UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]))
        }

        // Longest run of zero groups; RFC 5952 4.2.2 forbids "::" for a single group.
        var bestStart = -1
        var bestLength = 0
        var runStart = -1
        for (i, group) in groups.enumerated() {
            if group == 0 {
                if runStart < 0 { runStart = i }
                let length = i - runStart + 1
                if length > bestLength {
                    bestStart = runStart
                    bestLength = length
                }
            } else {
                runStart = -1
            }
        }
        func hex(_ slice: ArraySlice<UInt16>) -> String {
            slice.map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard bestLength >= 2 else { return hex(groups[...]) }
        return hex(groups[0..<bestStart]) + "::" + hex(groups[(bestStart + bestLength)...])
    }
}
