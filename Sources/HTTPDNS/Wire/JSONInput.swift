/// Lenient accessors over a `JSONReader` tree.
///
/// Providers disagree on types (a TTL as 60, 60.0 or "60"; `enable` as 1 or true),
/// so every accessor accepts the plausible spellings and returns nil for the rest
/// instead of trapping on a cast.
enum JSONInput {
    /// Parses a body into a JSON tree (object or array at the top level).
    static func parse(_ body: [UInt8]) throws(WireError) -> Any {
        guard !body.isEmpty else { throw .malformedJSON("empty body") }
        let root: Any
        do {
            root = try JSONReader.parse(body)
        } catch {
            throw .malformedJSON("not valid JSON")
        }
        guard root is [String: Any] || root is [Any] else { throw .malformedJSON("not valid JSON") }
        return root
    }

    static func object(_ body: [UInt8]) throws(WireError) -> [String: Any] {
        guard let object = try parse(body) as? [String: Any] else {
            throw .malformedJSON("top level is not an object")
        }
        return object
    }

    /// Whole numbers only; out-of-range or fractional values are nil, never a trap.
    static func int(_ value: Any?) -> Int? {
        switch value {
        case let number as Int:
            return (-9_000_000_000_000_000...9_000_000_000_000_000).contains(number) ? number : nil
        case let double as Double:
            guard double.isFinite, double == double.rounded(),
                  double >= -9.0e15, double <= 9.0e15 else { return nil }
            return Int(double)
        case let flag as Bool:
            return flag ? 1 : 0
        case let text as String:
            return Int(text.trimmingSpacesAndTabs)
        default:
            return nil
        }
    }

    static func string(_ value: Any?) -> String? {
        value as? String
    }

    /// A TTL clamped to 0...Int32.max (RFC 2181 section 8: larger values mean 0 on the wire;
    /// for JSON a negative TTL can only be a bug, and 0 means "do not cache").
    static func ttl(_ value: Any?) -> Int? {
        guard let raw = int(value) else { return nil }
        if raw < 0 { return 0 }
        return min(raw, Int(Int32.max))
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (what `.whitespaces` trimmed for a number).
    var trimmingSpacesAndTabs: Substring {
        let isBlank = { (character: Character) in character == " " || character == "\t" }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else { return "" }
        return self[first...last]
    }
}
