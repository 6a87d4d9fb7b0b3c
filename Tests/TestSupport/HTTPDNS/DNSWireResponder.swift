import Foundation

/// Builds RFC 1035 answers for the fake service: enough of the format to answer A/AAAA questions
/// with an optional CNAME, NXDOMAIN with an SOA, using compression pointers like real servers.
enum DNSWireResponder {
    struct Question {
        var name: String
        var type: UInt16
        /// Offset just past the question section.
        var end: Int
    }

    static func question(in query: [UInt8]) -> Question? {
        guard query.count >= 12 else { return nil }
        var offset = 12
        var labels: [String] = []
        while offset < query.count {
            let length = Int(query[offset])
            offset += 1
            if length == 0 { break }
            guard length < 64, offset + length <= query.count else { return nil }
            labels.append(String(decoding: query[offset..<offset + length], as: UTF8.self))
            offset += length
        }
        guard offset + 4 <= query.count else { return nil }
        let type = UInt16(query[offset]) << 8 | UInt16(query[offset + 1])
        return Question(name: labels.joined(separator: ".").lowercased(), type: type, end: offset + 4)
    }

    static func encodeName(_ name: String) -> [UInt8] {
        var out: [UInt8] = []
        for label in name.split(separator: ".") {
            out.append(UInt8(label.utf8.count))
            out += Array(label.utf8)
        }
        out.append(0)
        return out
    }

    static func response(to query: [UInt8], question: Question, cname: String?, addresses: [String], ttl: UInt32, nxdomain: Bool) -> [UInt8] {
        var out: [UInt8] = Array(query[0..<2])
        // QR=1, RD copied, RA=1, RCODE
        out += [0x81, nxdomain ? 0x83 : 0x80]
        var answers: [[UInt8]] = []
        let questionNamePointer: [UInt8] = [0xC0, 0x0C]
        var ownerForAddresses = questionNamePointer
        var cnameOffset: Int?
        if let cname, !nxdomain {
            let rdata = encodeName(cname)
            let header = questionNamePointer + u16(5) + u16(1) + u32(300) + u16(UInt16(rdata.count))
            answers.append(header + rdata)
            // The CNAME target's name sits right after that record's fixed header.
            cnameOffset = question.end + header.count
        }
        if let cnameOffset {
            ownerForAddresses = [0xC0 | UInt8(cnameOffset >> 8), UInt8(cnameOffset & 0xFF)]
        }
        if !nxdomain {
            for address in addresses {
                let rdata = addressBytes(address, type: question.type)
                guard !rdata.isEmpty else { continue }
                answers.append(ownerForAddresses + u16(question.type) + u16(1) + u32(ttl) + u16(UInt16(rdata.count)) + rdata)
            }
        }
        var authority: [[UInt8]] = []
        if nxdomain {
            let rdata = encodeName("ns.test") + encodeName("admin.test") + u32(1) + u32(7200) + u32(900) + u32(1_209_600) + u32(15)
            authority.append(encodeName("test") + u16(6) + u16(1) + u32(20) + u16(UInt16(rdata.count)) + rdata)
        }
        out += u16(1) + u16(UInt16(answers.count)) + u16(UInt16(authority.count)) + u16(0)
        out += Array(query[12..<question.end])
        for answer in answers { out += answer }
        for record in authority { out += record }
        return out
    }

    private static func addressBytes(_ text: String, type: UInt16) -> [UInt8] {
        if type == 1 {
            let parts = text.split(separator: ".").compactMap { UInt8($0) }
            return parts.count == 4 ? parts : []
        }
        var storage = in6_addr()
        guard inet_pton(AF_INET6, text, &storage) == 1 else { return [] }
        return withUnsafeBytes(of: &storage) { Array($0) }
    }

    private static func u16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    private static func u32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
}
