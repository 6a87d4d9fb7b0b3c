/// A DNS query as the DNS listener receives it (RFC 1035 section 4, EDNS0 per RFC 6891): one
/// question, maybe an OPT record. Parsing is bounded: at most `maximumLength` bytes are looked at,
/// the question name must be uncompressed, and at most `maximumAdditionalRecords` additional
/// records are read, so a hostile datagram costs a fixed amount of work.
public struct DNSQuery: Sendable, Equatable {
    /// Queries longer than this are refused with FORMERR: one question and an OPT record with
    /// cookies and RFC 8467 padding fit well inside it.
    public static let maximumLength = 1024
    /// At most this many additional records (OPT, a TSIG or a cookie-carrying client's extras).
    public static let maximumAdditionalRecords = 4
    /// The UDP payload size this listener advertises and answers up to (DNS flag day 2020).
    public static let advertisedPayloadSize = 1232

    public struct EDNS: Sendable, Equatable {
        /// The requestor's UDP payload size, 512 at least (RFC 6891 section 6.2.5).
        public var payloadSize: Int
        public var version: UInt8
        public var dnssecOK: Bool
    }

    public var id: UInt16
    /// The header's flags word as received (RD and CD are copied into answers).
    public var flags: UInt16
    /// The question section's bytes as received (name in its original case, type, class): echoed
    /// in every answer. A slice of the parsed message, not a copy (its indices are the message's).
    public var question: ArraySlice<UInt8>
    /// The question name in text form, lowercased, without the trailing dot ("" for the root);
    /// nil when a label holds a byte that is not printable ASCII or a dot, which no cache key has.
    public var name: String?
    public var type: UInt16
    public var qclass: UInt16
    public var edns: EDNS?

    public var recursionDesired: Bool { flags & 0x0100 != 0 }

    /// The largest UDP answer this query may get: 512 without EDNS, else its payload size capped
    /// at what we advertise.
    public var udpLimit: Int {
        guard let edns else { return 512 }
        return min(max(512, edns.payloadSize), Self.advertisedPayloadSize)
    }

    public init(id: UInt16, flags: UInt16, question: ArraySlice<UInt8>, name: String?, type: UInt16, qclass: UInt16, edns: EDNS?) {
        self.id = id
        self.flags = flags
        self.question = question
        self.name = name
        self.type = type
        self.qclass = qclass
        self.edns = edns
    }

    /// Why a message is not a query we answer normally, with what to do about it.
    public enum Problem: Error, Sendable, Equatable {
        /// Not worth an answer: shorter than a header, or a response (QR=1; answering responses
        /// makes loops).
        case drop(String)
        /// Answer with this RCODE, echoing `id` and, when it was readable, the question.
        case reply(rcode: UInt8, id: UInt16, flags: UInt16, question: [UInt8]?, edns: EDNS?, reason: String)
    }

    /// RCODEs used by the listener.
    public enum RCode {
        public static let noError: UInt8 = 0
        public static let formErr: UInt8 = 1
        public static let servFail: UInt8 = 2
        public static let nxDomain: UInt8 = 3
        public static let notImp: UInt8 = 4
        public static let refused: UInt8 = 5
        /// Extended RCODE 16 (RFC 6891): 1 in the OPT record's upper bits, 0 in the header.
        public static let badVers: UInt8 = 16
    }

    /// Parses `bytes` as a query; throws what to do instead when it is not one we can answer.
    public static func parse(_ bytes: [UInt8]) throws(Problem) -> DNSQuery {
        guard bytes.count >= 12 else { throw .drop("\(bytes.count) bytes: shorter than a DNS header") }
        let id = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        let flags = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        guard flags & 0x8000 == 0 else { throw .drop("a response (QR=1), not a query") }
        func formErr(_ reason: String, question: [UInt8]? = nil, edns: EDNS? = nil) -> Problem {
            .reply(rcode: RCode.formErr, id: id, flags: flags, question: question, edns: edns, reason: reason)
        }
        guard bytes.count <= maximumLength else { throw formErr("\(bytes.count) bytes: longer than \(maximumLength)") }
        let opcode = (flags >> 11) & 0xF
        guard opcode == 0 else {
            throw .reply(rcode: RCode.notImp, id: id, flags: flags, question: nil, edns: nil, reason: "opcode \(opcode)")
        }
        // The four section counts, read in place (no array: this runs once per datagram).
        func count(_ index: Int) -> UInt16 { UInt16(bytes[4 + 2 * index]) << 8 | UInt16(bytes[5 + 2 * index]) }
        let questions = count(0), additional = count(3)
        guard questions == 1 else { throw formErr("\(questions) questions; exactly one is answered") }
        guard count(1) == 0, count(2) == 0 else { throw formErr("a query with answer or authority records") }
        guard additional <= maximumAdditionalRecords else { throw formErr("\(additional) additional records") }

        let (name, nameEnd) = try readQuestionName(bytes, formErr: { formErr($0) })
        guard nameEnd + 4 <= bytes.count else { throw formErr("message ends inside the question") }
        let type = UInt16(bytes[nameEnd]) << 8 | UInt16(bytes[nameEnd + 1])
        let qclass = UInt16(bytes[nameEnd + 2]) << 8 | UInt16(bytes[nameEnd + 3])
        let question = bytes[12..<(nameEnd + 4)]
        var reader = DNSWireReader(bytes)
        try? reader.skip(nameEnd + 4, "")

        var edns: EDNS?
        do throws(WireError) {
            for _ in 0..<additional {
                // The root (one zero byte), as an OPT record's owner always is, without building a name.
                let ownerIsRoot = reader.remaining > 0 && bytes[reader.offset] == 0
                if ownerIsRoot { try reader.skip(1, "an additional record name") } else { _ = try reader.readName("an additional record name") }
                let rrType = try reader.readUInt16("an additional record")
                let rrClass = try reader.readUInt16("an additional record")
                let ttl = try reader.readUInt32("an additional record")
                let length = Int(try reader.readUInt16("an additional record"))
                try reader.skip(length, "the data of an additional record")
                guard rrType == 41 else { continue }
                guard edns == nil else { throw WireError.malformedMessage("two OPT records") }
                guard ownerIsRoot else { throw WireError.malformedMessage("an OPT record not owned by the root") }
                edns = EDNS(payloadSize: max(512, Int(rrClass)), version: UInt8((ttl >> 16) & 0xFF), dnssecOK: ttl & 0x8000 != 0)
            }
        } catch {
            throw formErr(error.description, question: Array(question))
        }
        if let edns, edns.version != 0 {
            throw .reply(rcode: RCode.badVers, id: id, flags: flags, question: Array(question), edns: edns, reason: "EDNS version \(edns.version)")
        }
        return DNSQuery(id: id, flags: flags, question: question, name: name, type: type, qclass: qclass, edns: edns)
    }

    /// The uncompressed question name at offset 12: its lowercased text (nil when it has bytes no
    /// host name has) and where it ends.
    /// Two passes and no intermediate array: the first checks the labels, the second writes the
    /// text straight into the string (names up to 15 bytes are small strings: no allocation).
    private static func readQuestionName(_ bytes: [UInt8], formErr: (String) -> Problem) throws(Problem) -> (String?, Int) {
        var position = 12
        var printable = true
        while true {
            guard position < bytes.count else { throw formErr("message ends inside the question name") }
            let length = Int(bytes[position])
            if length == 0 { break }
            guard length & 0xC0 == 0 else { throw formErr("a compressed or extended label in the question name") }
            guard position + 1 + length <= bytes.count else { throw formErr("message ends inside a label of the question name") }
            guard position + 1 + length + 1 - 12 <= DNSName.maximumWireLength else {
                throw formErr("question name longer than \(DNSName.maximumWireLength) bytes")
            }
            for byte in bytes[(position + 1)..<(position + 1 + length)] where byte <= 0x20 || byte >= 0x7F || byte == UInt8(ascii: ".") {
                printable = false
            }
            position += 1 + length
        }
        let end = position + 1
        guard printable else { return (nil, end) }
        // Text length: the label bytes plus a dot between labels = the wire length minus the first
        // length byte and the root (the root name alone: "").
        let textLength = max(0, position - 12 - 1)
        let name = String(unsafeUninitializedCapacity: textLength) { buffer in
            var read = 12
            var written = 0
            while bytes[read] != 0 {
                let length = Int(bytes[read])
                if written > 0 {
                    buffer[written] = UInt8(ascii: ".")
                    written += 1
                }
                for index in (read + 1)..<(read + 1 + length) {
                    buffer[written] = DNSName.lowercasedASCII(bytes[index])
                    written += 1
                }
                read += 1 + length
            }
            return written
        }
        return (name, end)
    }
}
