extension DNSMessage {
    private enum RRType {
        static let cname: UInt16 = 5
        static let soa: UInt16 = 6
    }

    private static let classIN: UInt16 = 1

    /// Parses a DoH answer to the query for `name` / `type`.
    ///
    /// Checks QR=1, the id (when `expectedID` is given) and TC (throws `.truncated`);
    /// RCODE 3 is nxdomain, any other non-zero RCODE throws `.rcode`. The question
    /// section is skipped; the answer section's A / AAAA / CNAME records (class IN)
    /// are followed from `name` through the CNAME chain. TTL is the min over the
    /// records used; for nxdomain / noData it is min(SOA TTL, SOA MINIMUM) from the
    /// authority section when an SOA is there. Other record types are skipped;
    /// an A or AAAA with the wrong RDATA length is an error.
    public static func parse(_ bytes: [UInt8], name: String, type: DNSRecordType, expectedID: UInt16?) throws(WireError) -> WireAnswer {
        let asked = try DNSName.wire(fromText: name)
        var reader = DNSWireReader(bytes)
        let id = try reader.readUInt16("the header")
        let flags = try reader.readUInt16("the header")
        let questionCount = try reader.readUInt16("the header")
        let answerCount = try reader.readUInt16("the header")
        let authorityCount = try reader.readUInt16("the header")
        _ = try reader.readUInt16("the header")  // additional records: not needed

        guard flags & 0x8000 != 0 else { throw .notAResponse }
        if let expectedID, id != expectedID { throw .idMismatch(expected: expectedID, received: id) }
        guard flags & 0x0200 == 0 else { throw .truncated }
        let rcode = Int(flags & 0x000F)
        guard rcode == 0 || rcode == 3 else { throw .rcode(rcode) }

        for _ in 0..<questionCount {
            _ = try reader.readName("the question name")
            try reader.skip(4, "the question")
        }

        // Each record consumes at least 11 bytes or throws, so hostile counts cost nothing.
        let wantedFamily: IPText.Family = type == .a ? .v4 : .v6
        var records: [CNAMEChain<[UInt8]>.Record] = []
        for _ in 0..<answerCount {
            let record = try readRecord(&reader, section: "answer")
            guard record.rrClass == classIN else { continue }
            if record.type == type.rawValue {
                let expectedLength = type == .a ? 4 : 16
                guard record.rdataLength == expectedLength else {
                    throw .malformedMessage("\(type == .a ? "A" : "AAAA") record with \(record.rdataLength) bytes of data")
                }
                let data = Array(bytes[record.rdataStart..<(record.rdataStart + expectedLength)])
                let text = type == .a ? IPText.format(v4: data) : IPText.format(v6: data)
                records.append(.init(owner: record.owner, ttl: record.ttl, value: .address(text, wantedFamily)))
            } else if record.type == RRType.cname {
                let (target, end) = try DNSWireReader.name(in: bytes, at: record.rdataStart, "a CNAME target")
                guard end <= record.rdataStart + record.rdataLength else {
                    throw .malformedMessage("CNAME target runs past its record")
                }
                records.append(.init(owner: record.owner, ttl: record.ttl, value: .alias(target)))
            }
        }

        if rcode == 3 {
            return WireAnswer(outcome: .nxdomain, ttl: try negativeTTL(&reader, count: authorityCount))
        }
        let result = try CNAMEChain(records).resolve(from: asked)
        guard !result.addresses.isEmpty else {
            return WireAnswer(outcome: .noData, ttl: try negativeTTL(&reader, count: authorityCount))
        }
        var collector = IPText.Collector()
        for address in result.addresses { collector.insert(address.text, address.family) }
        return WireAnswer(outcome: .addresses, ipv4: collector.ipv4, ipv6: collector.ipv6, ttl: result.ttl)
    }

    private struct ResourceRecord {
        var owner: [UInt8]
        var type: UInt16
        var rrClass: UInt16
        var ttl: Int
        var rdataStart: Int
        var rdataLength: Int
    }

    /// Reads one record header and skips its RDATA, which is guaranteed to lie inside `bytes`.
    private static func readRecord(_ reader: inout DNSWireReader, section: String) throws(WireError) -> ResourceRecord {
        let owner = try reader.readName("an \(section) record name")
        let type = try reader.readUInt16("an \(section) record")
        let rrClass = try reader.readUInt16("an \(section) record")
        let rawTTL = try reader.readUInt32("an \(section) record")
        let length = Int(try reader.readUInt16("an \(section) record"))
        let start = reader.offset
        try reader.skip(length, "the data of an \(section) record")
        return ResourceRecord(
            owner: owner, type: type, rrClass: rrClass,
            // RFC 2181 section 8: a TTL with the top bit set is to be treated as zero.
            ttl: rawTTL > UInt32(Int32.max) ? 0 : Int(rawTTL),
            rdataStart: start, rdataLength: length
        )
    }

    /// min(SOA TTL, SOA MINIMUM) of the first SOA (class IN) in the authority section
    /// (RFC 2308 section 5), nil without one.
    private static func negativeTTL(_ reader: inout DNSWireReader, count: UInt16) throws(WireError) -> Int? {
        for _ in 0..<count {
            let record = try readRecord(&reader, section: "authority")
            guard record.type == RRType.soa, record.rrClass == classIN else { continue }
            let rdataEnd = record.rdataStart + record.rdataLength
            let (_, mnameEnd) = try DNSWireReader.name(in: reader.bytes, at: record.rdataStart, "an SOA MNAME")
            let (_, rnameEnd) = try DNSWireReader.name(in: reader.bytes, at: mnameEnd, "an SOA RNAME")
            guard rnameEnd + 20 <= rdataEnd else {
                throw .malformedMessage("SOA record too short for its counters")
            }
            var fields = DNSWireReader(reader.bytes)
            try fields.skip(rnameEnd + 16, "an SOA record")
            let rawMinimum = try fields.readUInt32("an SOA MINIMUM")
            let minimum = rawMinimum > UInt32(Int32.max) ? 0 : Int(rawMinimum)
            return min(record.ttl, minimum)
        }
        return nil
    }
}
