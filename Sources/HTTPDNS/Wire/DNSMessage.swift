// Fuzzing: the package ships no fuzz target (the tests run seeded random and
// mutation rounds instead). To run libFuzzer against the parsers, add a scratch
// executable target that depends on HTTPDNS, with one file:
//
//     import HTTPDNS
//     @_cdecl("LLVMFuzzerTestOneInput")
//     public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
//         let bytes = Array(UnsafeBufferPointer(start: data, count: size))
//         _ = try? DNSMessage.parse(bytes, name: "www.example.com", type: .a, expectedID: nil)
//         _ = try? DoHJSON.parse(bytes, name: "www.example.com", type: .a)
//         return 0
//     }
//
// then build and run it with the toolchain's libFuzzer and AddressSanitizer:
//
//     swift build -c debug --product WireFuzz \
//         -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
//     .build/debug/WireFuzz -max_len=1024 -timeout=5 corpus/
//
// (seed corpus/ with real answers; a crash or timeout there is a bug here.)

/// RFC 1035 messages as carried by RFC 8484 DoH: query building and the GET form.
/// Answer parsing lives in `DNSMessage+Parsing.swift`.
public enum DNSMessage {
    /// A standard query: RD=1, one question, class IN, no EDNS.
    /// RFC 8484 section 4.1 recommends `id` 0 so identical queries are cacheable by HTTP caches.
    /// The name is lowercased; it must have labels of 1...63 bytes and at most 253 bytes in all
    /// (a trailing dot is allowed), printable ASCII only (IDNs as punycode).
    public static func makeQuery(name: String, type: DNSRecordType, id: UInt16 = 0) throws(WireError) -> [UInt8] {
        let qname = try DNSName.wire(fromText: name)
        var message: [UInt8] = []
        message.reserveCapacity(12 + qname.count + 4)
        appendUInt16(id, to: &message)
        appendUInt16(0x0100, to: &message)  // QR=0, opcode QUERY, RD=1
        appendUInt16(1, to: &message)       // QDCOUNT
        appendUInt16(0, to: &message)       // ANCOUNT
        appendUInt16(0, to: &message)       // NSCOUNT
        appendUInt16(0, to: &message)       // ARCOUNT
        message.append(contentsOf: qname)
        appendUInt16(type.rawValue, to: &message)
        appendUInt16(1, to: &message)       // class IN
        return message
    }

    /// Base64url (RFC 4648 section 5) without padding, as RFC 8484 requires for `dns=`.
    public static func base64URL(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(chunk >> 18 & 0x3F)])
            out.append(alphabet[Int(chunk >> 12 & 0x3F)])
            out.append(alphabet[Int(chunk >> 6 & 0x3F)])
            out.append(alphabet[Int(chunk & 0x3F)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let chunk = UInt32(bytes[index]) << 16
            out.append(alphabet[Int(chunk >> 18 & 0x3F)])
            out.append(alphabet[Int(chunk >> 12 & 0x3F)])
        case 2:
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out.append(alphabet[Int(chunk >> 18 & 0x3F)])
            out.append(alphabet[Int(chunk >> 12 & 0x3F)])
            out.append(alphabet[Int(chunk >> 6 & 0x3F)])
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The RFC 8484 GET form: `endpoint?dns=<base64url(query)>` (or `&dns=` when the
    /// endpoint already has a query), e.g. for "https://dns.google/dns-query".
    public static func getPath(endpoint: String, query: [UInt8]) -> String {
        QueryEncoding.append([("dns", base64URL(query))], to: endpoint)
    }

    static func appendUInt16(_ value: UInt16, to message: inout [UInt8]) {
        message.append(UInt8(value >> 8))
        message.append(UInt8(value & 0xFF))
    }
}
