/// Percent-encoding for query parameter values.
///
/// Everything outside RFC 3986 "unreserved" is escaped, except "," "/" ":" which
/// are legal in a query, used literally by the vendors' own SDKs (`query=4,6`,
/// `host=a,b`, `edns_client_subnet=1.2.3.0/24`) and carry no meaning to a server's
/// query splitter. "+" is escaped because form decoders read it as a space.
enum QueryEncoding {
    static func value(_ text: String) -> String {
        encode(text, slashAllowed: true)
    }

    /// A path segment: like a value but "/" must be escaped too.
    static func pathSegment(_ text: String) -> String {
        encode(text, slashAllowed: false)
    }

    private static func encode(_ text: String, slashAllowed: Bool) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isAllowed(byte) && (slashAllowed || byte != UInt8(ascii: "/")) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
             UInt8(ascii: ","), UInt8(ascii: "/"), UInt8(ascii: ":"):
            return true
        default:
            return false
        }
    }

    /// Appends `items` to `base`, keeping any query the base already has.
    static func append(_ items: [(String, String)], to base: String) -> String {
        let query = items.map { "\($0.0)=\(value($0.1))" }.joined(separator: "&")
        guard let questionMark = base.firstIndex(of: "?") else { return base + "?" + query }
        if questionMark == base.index(before: base.endIndex) || base.hasSuffix("&") {
            return base + query
        }
        return base + "&" + query
    }
}
