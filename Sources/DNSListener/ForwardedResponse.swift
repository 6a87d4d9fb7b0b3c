/// What the forwarded-answer cache needs to know of an upstream response, read without
/// allocating per record: whether and how long it may be cached (RFC 2308 for negative answers),
/// and where its TTL fields are (so a cached copy is served with the time it has left).
struct ForwardedResponse: Equatable {
    /// How long the response may be cached, in seconds, before the cache's floor and cap.
    var ttl: UInt32
    /// Byte offsets of the TTL field of every record (the OPT pseudo-record excluded).
    var ttlOffsets: [Int]
    /// The response's RCODE (low 4 bits).
    var rcode: UInt8
    /// NXDOMAIN or NODATA: its lifetime is the SOA's (RFC 2308), which a floor does not stretch.
    var negative = false

    /// SERVFAIL is cached this briefly at most (RFC 2308 §7.1: no more than five minutes; a few
    /// seconds spares a failing upstream a retry storm without hiding its recovery).
    static let servFailTTL: UInt32 = 5

    /// Reads `bytes` as the answer to a question of `questionLength` bytes (name, type, class);
    /// nil when it must not be cached: malformed, truncated (TC), another RCODE than NOERROR,
    /// NXDOMAIN or SERVFAIL, a question that is not the one asked, a negative answer without SOA
    /// (RFC 2308 §5), or a positive answer without records.
    static func analyze(_ bytes: [UInt8], question: ArraySlice<UInt8>) -> ForwardedResponse? {
        guard bytes.count >= 12, bytes[2] & 0x80 != 0, bytes[2] & 0x02 == 0 else { return nil }  // QR set, TC clear
        let rcode = bytes[3] & 0x0F
        guard rcode == 0 || rcode == 2 || rcode == 3 else { return nil }
        guard count(bytes, 4) == 1 else { return nil }
        let questionEnd = 12 + question.count
        // The same question, the name in any letter case (RFC 4343), type and class exactly.
        guard bytes.count >= questionEnd, question.count >= 5,
            asciiEqualIgnoringCase(bytes[12..<(questionEnd - 4)], question.dropLast(4)),
            bytes[(questionEnd - 4)..<questionEnd].elementsEqual(question.suffix(4))
        else { return nil }
        var offset = questionEnd
        var offsets: [Int] = []
        var answerTTL: UInt32?
        var negativeTTL: UInt32?
        let sections = [count(bytes, 6), count(bytes, 8), count(bytes, 10)]
        for (section, records) in sections.enumerated() {
            for _ in 0..<records {
                guard let end = skipName(bytes, offset), end + 10 <= bytes.count else { return nil }
                let type = UInt16(bytes[end]) << 8 | UInt16(bytes[end + 1])
                let ttl = UInt32(bytes[end + 4]) << 24 | UInt32(bytes[end + 5]) << 16 | UInt32(bytes[end + 6]) << 8 | UInt32(bytes[end + 7])
                let length = Int(bytes[end + 8]) << 8 | Int(bytes[end + 9])
                let rdata = end + 10
                guard rdata + length <= bytes.count else { return nil }
                if type != 41 {  // OPT's "TTL" holds flags
                    offsets.append(end + 4)
                    if section == 0 { answerTTL = min(answerTTL ?? ttl, ttl) }
                    if section == 1, type == 6, let minimum = soaMinimum(bytes, rdata: rdata, end: rdata + length) {
                        negativeTTL = min(ttl, minimum)
                    }
                }
                offset = rdata + length
            }
        }
        let ttl: UInt32
        var negative = rcode == 3
        switch rcode {
        case 2:
            ttl = servFailTTL
        case 3:
            guard let negativeTTL else { return nil }
            ttl = negativeTTL
        default:
            if let answerTTL {
                ttl = answerTTL
            } else {
                guard let negativeTTL else { return nil }  // NODATA
                ttl = negativeTTL
                negative = true
            }
        }
        return ForwardedResponse(ttl: min(ttl, Int32.max.magnitude), ttlOffsets: offsets, rcode: rcode, negative: negative)
    }

    static func count(_ bytes: [UInt8], _ at: Int) -> Int {
        Int(bytes[at]) << 8 | Int(bytes[at + 1])
    }

    /// The end of the name at `offset` as it lies in the message (a pointer ends it), or nil.
    static func skipName(_ bytes: [UInt8], _ offset: Int) -> Int? {
        var position = offset
        while position < bytes.count {
            let length = bytes[position]
            switch length & 0xC0 {
            case 0x00:
                if length == 0 { return position + 1 }
                position += 1 + Int(length)
            case 0xC0:
                return position + 2 <= bytes.count ? position + 2 : nil
            default:
                return nil
            }
        }
        return nil
    }

    /// The MINIMUM field of SOA RDATA (after MNAME, RNAME, serial, refresh, retry, expire).
    static func soaMinimum(_ bytes: [UInt8], rdata: Int, end: Int) -> UInt32? {
        guard let mname = skipName(bytes, rdata), let rname = skipName(bytes, mname), rname + 20 <= end else { return nil }
        let at = rname + 16
        return UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    static func asciiEqualIgnoringCase(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { lower($0) == lower($1) }
    }

    static func lower(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }
}
