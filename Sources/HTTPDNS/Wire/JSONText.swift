/// JSON text written by hand (the log path must not allocate an encoder per line; request bodies
/// and answers are a few fields): strings quoted and escaped per RFC 8259 section 7.
public enum JSONText {
    public static func appendQuoted(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// `s` as a JSON string, quotation marks included.
    public static func quoted(_ s: String) -> String {
        var out = ""
        appendQuoted(s, to: &out)
        return out
    }

    /// Milliseconds as the access log writes them: rounded to microseconds, trailing zeros dropped.
    public static func formatMs(_ value: Double) -> String {
        let scaled = (value * 1000).rounded() / 1000
        if scaled == scaled.rounded() { return String(Int(scaled)) }
        return String(scaled)
    }
}
