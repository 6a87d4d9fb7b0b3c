import NetworkTypes

/// Builds the DNS listener's answers: header, the question echoed as received, answer records owned
/// by the question name (a compression pointer to offset 12), an SOA for negative answers, and an
/// OPT record when the query had one. When the answer does not fit `limit` bytes it is sent with
/// TC=1 and no records (RFC 1035 section 4.2.1; the client retries over TCP).
public enum DNSAnswerBuilder {
    /// One answer record owned by the question name.
    public struct Record: Sendable, Equatable {
        public var type: UInt16
        public var ttl: UInt32
        public var rdata: [UInt8]

        public init(type: UInt16, ttl: UInt32, rdata: [UInt8]) {
            self.type = type
            self.ttl = ttl
            self.rdata = rdata
        }
    }

    /// Header bits: QR, RA, TC, AA; RD and CD are copied from the query.
    private static func flags(rcode: UInt8, queryFlags: UInt16, truncated: Bool, authoritative: Bool = false) -> UInt16 {
        var flags: UInt16 = 0x8080 | (queryFlags & 0x0110) | UInt16(rcode & 0x0F)
        if truncated { flags |= 0x0200 }
        if authoritative { flags |= 0x0400 }
        return flags
    }

    /// An answer to `query`. `negativeTTL`: add an SOA (owned by the question name) with this TTL and
    /// MINIMUM, so resolvers can cache NXDOMAIN / NODATA (RFC 2308). `authoritative`: AA set (the
    /// listener's own records, the hosts file).
    public static func answer(
        to query: DNSQuery, rcode: UInt8, records: [Record] = [], negativeTTL: UInt32? = nil, limit: Int = 65535,
        authoritative: Bool = false
    ) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(12 + query.question.count + records.count * 16 + 40)
        var body = records.map { (record: $0, section: 1) }
        if let negativeTTL {
            // MNAME and RNAME the root; serial 0; refresh, retry, expire nominal; MINIMUM the TTL.
            var rdata: [UInt8] = [0, 0, 0, 0, 0, 0]
            for value: UInt32 in [3600, 600, 86400, negativeTTL] { append32(value, to: &rdata) }
            body.append((Record(type: 6, ttl: negativeTTL, rdata: rdata), 2))
        }
        let size = 12 + query.question.count + body.reduce(0) { $0 + 12 + $1.record.rdata.count } + (query.edns == nil ? 0 : 11)
        let truncated = size > limit
        if truncated { body = [] }
        append16(query.id, to: &out)
        append16(flags(rcode: rcode, queryFlags: query.flags, truncated: truncated, authoritative: authoritative), to: &out)
        append16(1, to: &out)
        append16(UInt16(body.filter { $0.section == 1 }.count), to: &out)
        append16(UInt16(body.filter { $0.section == 2 }.count), to: &out)
        append16(query.edns == nil ? 0 : 1, to: &out)
        out.append(contentsOf: query.question)
        for (record, _) in body {
            out.append(0xC0)
            out.append(0x0C)
            append16(record.type, to: &out)
            append16(1, to: &out)
            append32(record.ttl, to: &out)
            append16(UInt16(record.rdata.count), to: &out)
            out.append(contentsOf: record.rdata)
        }
        if query.edns != nil { appendOPT(extendedRCode: 0, to: &out) }
        return out
    }

    /// A NOERROR answer of A (`type` 1) or AAAA (28) records for `ips`, in order, written into one
    /// buffer: no record values, no per-address arrays (the DNS listener's cached answers). Text
    /// that is not an address of that family is skipped. Too big for `limit`: TC=1, no records.
    public static func addressAnswer(to query: DNSQuery, type: UInt16, ttl: UInt32, ips: [String], limit: Int = 65535) -> [UInt8] {
        var out: [UInt8] = []
        addressAnswer(to: query, type: type, ttl: ttl, ips: ips, limit: limit, into: &out)
        return out
    }

    /// `addressAnswer` written into `out`, which it empties first and whose storage it keeps:
    /// a caller answering one query after another reuses one array.
    public static func addressAnswer(to query: DNSQuery, type: UInt16, ttl: UInt32, ips: [String], limit: Int = 65535, into out: inout [UInt8]) {
        let length = type == DNSRecordType.a.rawValue ? 4 : 16
        out.removeAll(keepingCapacity: true)
        out.reserveCapacity(12 + query.question.count + ips.count * (12 + length) + 11)
        append16(query.id, to: &out)
        append16(flags(rcode: DNSQuery.RCode.noError, queryFlags: query.flags, truncated: false), to: &out)
        append16(1, to: &out)
        append16(0, to: &out)                            // ANCOUNT, set below
        append16(0, to: &out)
        append16(query.edns == nil ? 0 : 1, to: &out)
        out.append(contentsOf: query.question)
        let recordsStart = out.count
        var count: UInt16 = 0
        for ip in ips {
            let start = out.count
            out.append(0xC0)
            out.append(0x0C)
            append16(type, to: &out)
            append16(1, to: &out)
            append32(ttl, to: &out)
            append16(UInt16(length), to: &out)
            guard appendAddress(ip, length: length, to: &out) else {
                out.removeSubrange(start...)
                continue
            }
            count += 1
        }
        if out.count + (query.edns == nil ? 0 : 11) > limit {
            out.removeSubrange(recordsStart...)
            count = 0
            out[2] |= 0x02                               // TC
        }
        out[6] = UInt8(count >> 8)
        out[7] = UInt8(count & 0xFF)
        if query.edns != nil { appendOPT(extendedRCode: 0, to: &out) }
    }

    /// Appends the `length` (4 or 16) address bytes of `text`; false (nothing appended) when it is
    /// not an address of that length. Dotted-quad IPv4 is read by hand (the common case); anything
    /// else goes through `IPAddress`.
    static func appendAddress(_ text: String, length: Int, to out: inout [UInt8]) -> Bool {
        if length == 4, let appended = appendDottedQuad(text, to: &out) { return appended }
        guard let bytes = addressData(text), bytes.count == length else { return false }
        out.append(contentsOf: bytes)
        return true
    }

    /// Four decimal octets (0-255, no leading zeros, as inet_pton takes them): appended, true;
    /// nil when the text is not of that shape (the caller then asks `IPAddress`).
    private static func appendDottedQuad(_ text: String, to out: inout [UInt8]) -> Bool? {
        var text = text
        return text.withUTF8 { utf8 -> Bool? in
            var octets: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
            var index = 0
            var value = 0
            var digits = 0
            for byte in utf8 {
                if byte == UInt8(ascii: ".") {
                    guard digits > 0, index < 3 else { return nil }
                    withUnsafeMutableBytes(of: &octets) { $0[index] = UInt8(value) }
                    index += 1
                    value = 0
                    digits = 0
                } else if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                    guard !(digits == 1 && value == 0), digits < 3 else { return nil }
                    value = value * 10 + Int(byte - UInt8(ascii: "0"))
                    guard value <= 255 else { return nil }
                    digits += 1
                } else {
                    return nil
                }
            }
            guard digits > 0, index == 3 else { return nil }
            withUnsafeMutableBytes(of: &octets) { $0[3] = UInt8(value) }
            out.append(octets.0)
            out.append(octets.1)
            out.append(octets.2)
            out.append(octets.3)
            return true
        }
    }

    /// The answer to a message that is not a query we serve (FORMERR, NOTIMP, BADVERS, REFUSED).
    public static func problem(rcode: UInt8, id: UInt16, queryFlags: UInt16, question: [UInt8]?, edns: DNSQuery.EDNS?) -> [UInt8] {
        var out: [UInt8] = []
        append16(id, to: &out)
        append16(flags(rcode: rcode & 0x0F, queryFlags: queryFlags, truncated: false), to: &out)
        append16(question == nil ? 0 : 1, to: &out)
        append16(0, to: &out)
        append16(0, to: &out)
        append16(edns == nil && rcode < 16 ? 0 : 1, to: &out)
        if let question { out.append(contentsOf: question) }
        if edns != nil || rcode >= 16 { appendOPT(extendedRCode: rcode >> 4, to: &out) }
        return out
    }

    /// An upstream server's answer relayed to the client: its ID put back to the client's, and when
    /// it does not fit `limit` (a UDP client), replaced by a TC=1 answer with the same RCODE.
    public static func relay(_ upstream: [UInt8], to query: DNSQuery, limit: Int) -> [UInt8] {
        guard upstream.count >= 12 else { return answer(to: query, rcode: DNSQuery.RCode.servFail) }
        guard upstream.count <= limit else {
            var truncated = answer(to: query, rcode: upstream[3] & 0x0F)
            truncated[3] &= 0xF0
            truncated[3] |= upstream[3] & 0x0F
            truncated[2] |= 0x02
            return truncated
        }
        var relayed = upstream
        relayed[0] = UInt8(query.id >> 8)
        relayed[1] = UInt8(query.id & 0xFF)
        return relayed
    }

    /// RDATA of an A (4 bytes) or AAAA (16 bytes) record for an address in text form (nil if it is
    /// not an address).
    public static func addressData(_ text: String) -> [UInt8]? {
        IPAddress(text)?.bytes
    }

    private static func appendOPT(extendedRCode: UInt8, to out: inout [UInt8]) {
        out.append(0)                                   // owner: root
        append16(41, to: &out)                          // TYPE OPT
        append16(UInt16(DNSQuery.advertisedPayloadSize), to: &out)
        out.append(extendedRCode)
        out.append(0)                                   // version 0
        append16(0, to: &out)                           // flags (DO not set: no DNSSEC records)
        append16(0, to: &out)                           // no options
    }

    static func append16(_ value: UInt16, to out: inout [UInt8]) {
        out.append(UInt8(value >> 8))
        out.append(UInt8(value & 0xFF))
    }

    static func append32(_ value: UInt32, to out: inout [UInt8]) {
        out.append(UInt8(value >> 24))
        out.append(UInt8((value >> 16) & 0xFF))
        out.append(UInt8((value >> 8) & 0xFF))
        out.append(UInt8(value & 0xFF))
    }
}
