import HTTPDNS

/// The DNS listener's cache of forwarded answers (every type: what it forwards is what HTTPDNS
/// does not answer, e.g. a cluster's names, SRV, MX, TXT), so repeated questions stop reaching the
/// upstream — a node cache's whole job. A value type without a clock: every call takes `now`.
///
/// - Lifetime: the smallest TTL of the answer records, within `minTTL`...`maxTTL`; negative answers
///   (NXDOMAIN, NODATA) for min(SOA TTL, SOA MINIMUM) (RFC 2308 §5; `maxTTL` caps it, no floor
///   stretches it), not at all without an SOA;
///   SERVFAIL briefly (`ForwardedResponse.servFailTTL`); truncated answers and other RCODEs never.
/// - Key: the question (name in lowercase), whether the query has EDNS, the DO and CD bits, and
///   the EDNS client subnet when the query carries one: answers that differ by those never mix.
/// - Served with the query's ID, its RD bit and its letter case in the question, and each TTL
///   lowered by the time the answer has spent here; after its TTL an entry is kept `staleWindow`
///   (`max-stale`) longer for serve-stale (RFC 8767), used only when the upstream does not answer.
/// - Bounded: `capacity` entries; beyond, the entries past their stale window go first, then the
///   oldest stored.
struct ForwardCache<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration, Instant: Sendable {
    struct Key: Hashable, Sendable {
        /// The question's name in wire form, lowercased, then its type and class.
        var question: [UInt8]
        /// The query has an OPT record: the answer carries one only then (RFC 6891 §7).
        var edns: Bool
        var dnssecOK: Bool
        var checkingDisabled: Bool
        /// The EDNS0 client-subnet option's data (RFC 7871), when the query has one.
        var clientSubnet: [UInt8]?

        init(question: [UInt8], edns: Bool, dnssecOK: Bool, checkingDisabled: Bool, clientSubnet: [UInt8]?) {
            self.question = question
            self.edns = edns
            self.dnssecOK = dnssecOK
            self.checkingDisabled = checkingDisabled
            self.clientSubnet = clientSubnet
        }

        /// The key of `query` (its raw bytes for the client-subnet option).
        init(_ query: DNSQuery, raw: [UInt8]) {
            var question = Array(query.question)
            for index in 0..<max(0, question.count - 4) { question[index] = ForwardedResponse.lower(question[index]) }
            self.init(
                question: question, edns: query.edns != nil, dnssecOK: query.edns?.dnssecOK ?? false, checkingDisabled: query.flags & 0x0010 != 0,
                clientSubnet: query.edns == nil ? nil : ForwardCache.clientSubnet(in: raw, questionEnd: 12 + query.question.count))
        }
    }

    struct Limits: Sendable {
        /// `dns-cache-size` (0: nothing is cached).
        var capacity = 10_000
        /// `dns-cache-min-ttl` (positive answers only) and `dns-cache-max-ttl`.
        var minTTL: UInt32 = 0
        var maxTTL: UInt32 = 86_400
        /// `max-stale`: how long after its TTL an entry may still be served when the upstream fails.
        var staleWindow: Duration = .seconds(3600)
    }

    struct Entry: Sendable {
        var response: [UInt8]
        var ttlOffsets: [Int]
        var stored: Instant
        var ttl: UInt32
        var rcode: UInt8
        /// Tells this entry from an older one of the same key in `order`.
        var serial: UInt64
    }

    /// A cached answer as the admin `/cache` lists it.
    struct Listing: Sendable, Equatable {
        var name: String
        var type: UInt16
        var rcode: UInt8
        /// Seconds left (negative: stale for that long).
        var ttlRemaining: Int
    }

    let limits: Limits
    private(set) var entries: [Key: Entry] = [:]
    /// Keys in the order stored (with the serial they were stored under), for eviction.
    private var order: [(key: Key, serial: UInt64)] = []
    private var orderStart = 0
    private var serial: UInt64 = 0

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Stores the upstream's answer to the question `key` stands for, if it may be cached.
    @discardableResult
    mutating func store(_ response: [UInt8], for key: Key, now: Instant) -> Bool {
        guard limits.capacity > 0, let analysis = ForwardedResponse.analyze(response, question: key.question[...]) else { return false }
        let floor = analysis.rcode == 2 || analysis.negative ? 0 : limits.minTTL
        let ttl = analysis.rcode == 2 ? analysis.ttl : min(max(analysis.ttl, floor), limits.maxTTL)
        guard ttl > 0 else { return false }
        if entries[key] == nil, entries.count >= limits.capacity { evict(now: now) }
        serial += 1
        entries[key] = Entry(response: response, ttlOffsets: analysis.ttlOffsets, stored: now, ttl: ttl, rcode: analysis.rcode, serial: serial)
        order.append((key, serial))
        compactOrder()
        return true
    }

    /// The answer to `query` while its entry is fresh.
    func fresh(_ key: Key, for query: DNSQuery, now: Instant) -> [UInt8]? {
        guard let entry = entries[key] else { return nil }
        let age = Self.seconds(entry.stored.duration(to: now))
        guard age < Double(entry.ttl) else { return nil }
        return Self.serve(entry, to: query, ttl: { original in original > UInt32(age) ? original - UInt32(age) : 0 })
    }

    /// The answer to `query` from an entry past its TTL but within the stale window (RFC 8767),
    /// every TTL `staleTTL` at most; for when the upstream did not answer.
    func stale(_ key: Key, for query: DNSQuery, now: Instant, staleTTL: UInt32) -> [UInt8]? {
        guard let entry = entries[key], entry.rcode != 2 else { return nil }
        let age = entry.stored.duration(to: now)
        guard age < .seconds(Int64(entry.ttl)) + limits.staleWindow else { return nil }
        return Self.serve(entry, to: query, ttl: { min($0, staleTTL) })
    }

    /// Forgets the entries for `name` (every type; all entries when nil). Returns how many.
    @discardableResult
    mutating func purge(_ name: String?) -> Int {
        guard let name else {
            let count = entries.count
            entries.removeAll()
            order.removeAll()
            orderStart = 0
            return count
        }
        let before = entries.count
        entries = entries.filter { key, _ in Self.name(of: key.question).lowercased() != name.lowercased() }
        return before - entries.count
    }

    /// Every entry, for the admin `/cache`.
    func listing(now: Instant) -> [Listing] {
        entries.map { key, entry in
            let age = Self.seconds(entry.stored.duration(to: now))
            let type = key.question.count >= 4 ? UInt16(key.question[key.question.count - 4]) << 8 | UInt16(key.question[key.question.count - 3]) : 0
            return Listing(name: Self.name(of: key.question), type: type, rcode: entry.rcode, ttlRemaining: Int(Double(entry.ttl) - age))
        }
    }

    // MARK: - helpers

    /// The cached response rewritten for `query`: its ID, its RD bit, its question bytes (letter
    /// case), and each TTL through `ttl`.
    static func serve(_ entry: Entry, to query: DNSQuery, ttl: (UInt32) -> UInt32) -> [UInt8] {
        var bytes = entry.response
        bytes[0] = UInt8(query.id >> 8)
        bytes[1] = UInt8(query.id & 0xFF)
        bytes[2] = (bytes[2] & ~0x01) | (query.recursionDesired ? 0x01 : 0)
        let question = query.question
        if bytes.count >= 12 + question.count {
            bytes.replaceSubrange(12..<(12 + question.count), with: question)
        }
        for offset in entry.ttlOffsets {
            let original = UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
            let value = ttl(original)
            bytes[offset] = UInt8(value >> 24)
            bytes[offset + 1] = UInt8((value >> 16) & 0xFF)
            bytes[offset + 2] = UInt8((value >> 8) & 0xFF)
            bytes[offset + 3] = UInt8(value & 0xFF)
        }
        return bytes
    }

    private mutating func evict(now: Instant) {
        let before = entries.count
        entries = entries.filter { _, entry in entry.stored.duration(to: now) < .seconds(Int64(entry.ttl)) + limits.staleWindow }
        guard entries.count == before else { return }
        while orderStart < order.count {
            let (key, serial) = order[orderStart]
            orderStart += 1
            if entries[key]?.serial == serial {
                entries[key] = nil
                return
            }
        }
    }

    /// Drops the consumed front of `order` and the keys stored again since, once they outnumber
    /// the live entries (so `order` stays within twice the capacity).
    private mutating func compactOrder() {
        guard order.count - orderStart > 2 * max(entries.count, 16) else { return }
        order = order[orderStart...].filter { entries[$0.key]?.serial == $0.serial }
        orderStart = 0
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The dotted name of a question's wire-form name (no compression in a question).
    static func name(of question: [UInt8]) -> String {
        var labels: [String] = []
        var index = 0
        while index < question.count, question[index] != 0 {
            let length = Int(question[index])
            guard index + 1 + length <= question.count else { break }
            labels.append(String(decoding: question[(index + 1)..<(index + 1 + length)], as: UTF8.self))
            index += 1 + length
        }
        return labels.isEmpty ? "." : labels.joined(separator: ".")
    }

    /// The client-subnet option (code 8) of the query's OPT record, if any: the records after the
    /// question are walked to the additional section (queries rarely carry any but the OPT).
    static func clientSubnet(in raw: [UInt8], questionEnd: Int) -> [UInt8]? {
        guard raw.count >= 12 else { return nil }
        let records = ForwardedResponse.count(raw, 6) + ForwardedResponse.count(raw, 8) + ForwardedResponse.count(raw, 10)
        var offset = questionEnd
        for _ in 0..<records {
            guard let end = ForwardedResponse.skipName(raw, offset), end + 10 <= raw.count else { return nil }
            let type = UInt16(raw[end]) << 8 | UInt16(raw[end + 1])
            let length = Int(raw[end + 8]) << 8 | Int(raw[end + 9])
            let rdata = end + 10
            guard rdata + length <= raw.count else { return nil }
            if type == 41 {
                var option = rdata
                while option + 4 <= rdata + length {
                    let code = Int(raw[option]) << 8 | Int(raw[option + 1])
                    let size = Int(raw[option + 2]) << 8 | Int(raw[option + 3])
                    guard option + 4 + size <= rdata + length else { return nil }
                    if code == 8 { return Array(raw[(option + 4)..<(option + 4 + size)]) }
                    option += 4 + size
                }
            }
            offset = rdata + length
        }
        return nil
    }
}
