import HTTPDNS
import Testing

@testable import DNSListener

/// The forwarded-answer cache byte by byte: what is cached and for how long (RFC 2308 for negative
/// answers), what a cached answer looks like when served (ID, RD, letter case, aged TTLs), the
/// key's DO/CD/ECS, serve-stale, the bound.
@Suite struct ForwardCacheTests {
    typealias Cache = ForwardCache<ContinuousClock.Instant>
    let start = ContinuousClock.now

    enum QType: UInt16 { case a = 1, txt = 16, srv = 33 }

    /// A query for `name`/`type`; `dnssec`: an OPT with DO; `options`: OPT option bytes.
    static func query(_ name: String, _ type: QType, id: UInt16 = 0x1234, rd: Bool = true, cd: Bool = false, dnssec: Bool? = nil, options: [UInt8] = []) throws -> (DNSQuery, [UInt8]) {
        var bytes: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), rd ? 0x01 : 0x00, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in name.split(separator: ".") { bytes += [UInt8(label.utf8.count)] + Array(label.utf8) }
        bytes += [0, UInt8(type.rawValue >> 8), UInt8(type.rawValue & 0xFF), 0, 1]
        if cd { bytes[3] |= 0x10 }
        if let dnssec {
            bytes[11] = 1  // ARCOUNT
            bytes += [0, 0, 41, 0x04, 0xD0, 0, 0, dnssec ? 0x80 : 0, 0, UInt8(options.count >> 8), UInt8(options.count & 0xFF)] + options
        }
        return (try DNSQuery.parse(bytes), bytes)
    }

    static func txt(_ query: DNSQuery, ttl: UInt32, _ text: String = "upstream") -> [UInt8] {
        DNSAnswerBuilder.answer(to: query, rcode: 0, records: [.init(type: 16, ttl: ttl, rdata: [UInt8(text.utf8.count)] + Array(text.utf8))])
    }

    /// The TTL of the first answer record (after a question of `query`'s length and the 2-byte pointer, type, class).
    static func firstTTL(_ bytes: [UInt8], _ query: DNSQuery) -> UInt32 {
        let at = 12 + query.question.count + 2 + 4
        return UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    @Test func aPositiveAnswerIsServedWithItsTimeLeftThenOnlyAsStale() throws {
        var cache = Cache()
        let (query, raw) = try Self.query("svc.cluster.local", .txt)
        let key = Cache.Key(query, raw: raw)
        do {
            let stored = cache.store(Self.txt(query, ttl: 30), for: key, now: start)
            #expect(stored)
        }
        let (again, _) = try Self.query("svc.cluster.local", .txt, id: 0xBEEF)
        let served = try #require(cache.fresh(key, for: again, now: start + .seconds(10)))
        #expect(served[0] == 0xBE && served[1] == 0xEF)
        #expect(Self.firstTTL(served, again) == 20)
        #expect(Array(served[(served.count - 9)...]) == Array("\u{8}upstream".utf8))
        #expect(cache.fresh(key, for: again, now: start + .seconds(30)) == nil)
        let stale = try #require(cache.stale(key, for: again, now: start + .seconds(3600), staleTTL: 30))
        #expect(Self.firstTTL(stale, again) == 30)
        #expect(cache.stale(key, for: again, now: start + .seconds(30) + .seconds(86_400), staleTTL: 30) == nil)
    }

    @Test func theQuestionComesBackInTheAskersLetterCaseAndRDBit() throws {
        var cache = Cache()
        let (lower, raw) = try Self.query("svc.cluster.local", .txt)
        do {
            let stored = cache.store(Self.txt(lower, ttl: 60), for: Cache.Key(lower, raw: raw), now: start)
            #expect(stored)
        }
        let (mixed, mixedRaw) = try Self.query("SVC.Cluster.LOCAL", .txt, rd: false)
        let key = Cache.Key(mixed, raw: mixedRaw)
        #expect(key == Cache.Key(lower, raw: raw))
        let served = try #require(cache.fresh(key, for: mixed, now: start))
        #expect(Array(served[12..<(12 + mixed.question.count)]) == Array(mixed.question))
        #expect(served[2] & 0x01 == 0)
    }

    @Test func negativeAnswersFollowRFC2308() throws {
        var cache = Cache()
        let (query, raw) = try Self.query("gone.cluster.local", .a)
        let key = Cache.Key(query, raw: raw)
        // NXDOMAIN with an SOA: min(SOA TTL, MINIMUM) (the builder sets both to 45).
        do {
            let stored = cache.store(DNSAnswerBuilder.answer(to: query, rcode: 3, negativeTTL: 45), for: key, now: start)
            #expect(stored)
        }
        #expect(cache.fresh(key, for: query, now: start + .seconds(44)) != nil)
        #expect(cache.fresh(key, for: query, now: start + .seconds(45)) == nil)
        // Without an SOA a negative answer is not cached (RFC 2308 §5); NODATA likewise.
        var other = Cache()
        do {
            let stored = other.store(DNSAnswerBuilder.answer(to: query, rcode: 3), for: key, now: start)
            #expect(!stored)
        }
        do {
            let stored = other.store(DNSAnswerBuilder.answer(to: query, rcode: 0), for: key, now: start)
            #expect(!stored)
        }
        do {
            let stored = other.store(DNSAnswerBuilder.answer(to: query, rcode: 0, negativeTTL: 20), for: key, now: start)
            #expect(stored)
        }
    }

    @Test func failuresAndTruncationAreCachedBrieflyOrNotAtAll() throws {
        let (query, raw) = try Self.query("svc.cluster.local", .srv)
        let key = Cache.Key(query, raw: raw)
        var cache = Cache()
        do {
            let stored = cache.store(DNSAnswerBuilder.answer(to: query, rcode: 2), for: key, now: start)
            #expect(stored)
        }
        #expect(cache.fresh(key, for: query, now: start + .seconds(4)) != nil)
        #expect(cache.fresh(key, for: query, now: start + .seconds(5)) == nil)
        #expect(cache.stale(key, for: query, now: start + .seconds(6), staleTTL: 30) == nil, "a SERVFAIL is never served stale")
        var refused = Cache()
        do {
            let stored = refused.store(DNSAnswerBuilder.answer(to: query, rcode: 5), for: key, now: start)
            #expect(!stored)
        }
        var truncated = Self.txt(query, ttl: 60)
        truncated[2] |= 0x02
        do {
            let stored = refused.store(truncated, for: key, now: start)
            #expect(!stored)
        }
        // An answer to another question is not this question's.
        let (other, _) = try Self.query("other.cluster.local", .srv)
        do {
            let stored = refused.store(Self.txt(other, ttl: 60), for: key, now: start)
            #expect(!stored)
        }
    }

    @Test func theKeyKeepsDNSSECCheckingAndClientSubnetApartButNotCookies() throws {
        let (plain, plainRaw) = try Self.query("a.test", .txt)
        let (withDO, doRaw) = try Self.query("a.test", .txt, dnssec: true)
        let (withCD, cdRaw) = try Self.query("a.test", .txt, cd: true)
        let ecs1: [UInt8] = [0, 8, 0, 7, 0, 1, 24, 0, 192, 0, 2]
        let ecs2: [UInt8] = [0, 8, 0, 7, 0, 1, 24, 0, 198, 51, 100]
        let cookie: [UInt8] = [0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8]
        let (subnet1, s1Raw) = try Self.query("a.test", .txt, dnssec: false, options: ecs1)
        let (subnet2, s2Raw) = try Self.query("a.test", .txt, dnssec: false, options: cookie + ecs2)
        let (cookied, cookieRaw) = try Self.query("a.test", .txt, dnssec: false, options: cookie)
        let (optOnly, optRaw) = try Self.query("a.test", .txt, dnssec: false)
        let keys = [
            Cache.Key(plain, raw: plainRaw), Cache.Key(withDO, raw: doRaw), Cache.Key(withCD, raw: cdRaw),
            Cache.Key(subnet1, raw: s1Raw), Cache.Key(subnet2, raw: s2Raw),
        ]
        #expect(Set(keys).count == 5)
        #expect(Cache.Key(subnet2, raw: s2Raw).clientSubnet == Array(ecs2[4...]))
        #expect(Cache.Key(cookied, raw: cookieRaw) == Cache.Key(optOnly, raw: optRaw))
        // An answer to a query with EDNS carries an OPT record, which a client without EDNS must
        // not get (RFC 6891 section 7).
        #expect(Cache.Key(optOnly, raw: optRaw) != Cache.Key(plain, raw: plainRaw))
    }

    @Test func ttlsAreHeldWithinTheFloorAndTheCap() throws {
        var cache = Cache(limits: .init(capacity: 10, minTTL: 30, maxTTL: 60))
        let (short, shortRaw) = try Self.query("short.test", .txt)
        let (long, longRaw) = try Self.query("long.test", .txt)
        do {
            let stored = cache.store(Self.txt(short, ttl: 1), for: Cache.Key(short, raw: shortRaw), now: start)
            #expect(stored)
        }
        do {
            let stored = cache.store(Self.txt(long, ttl: 3600), for: Cache.Key(long, raw: longRaw), now: start)
            #expect(stored)
        }
        #expect(cache.fresh(Cache.Key(short, raw: shortRaw), for: short, now: start + .seconds(29)) != nil)
        #expect(cache.fresh(Cache.Key(long, raw: longRaw), for: long, now: start + .seconds(60)) == nil)
    }

    @Test func theFloorDoesNotStretchNegativeAnswersAndSizeZeroCachesNothing() throws {
        let (query, raw) = try Self.query("gone.test", .txt)
        let key = Cache.Key(query, raw: raw)
        var cache = Cache(limits: .init(capacity: 10, minTTL: 300, maxTTL: 3600))
        do {
            let stored = cache.store(DNSAnswerBuilder.answer(to: query, rcode: 3, negativeTTL: 20), for: key, now: start)
            #expect(stored)
        }
        #expect(cache.fresh(key, for: query, now: start + .seconds(20)) == nil, "an NXDOMAIN lives by its SOA, not the floor")
        var off = Cache(limits: .init(capacity: 0))
        do {
            let stored = off.store(Self.txt(query, ttl: 60), for: key, now: start)
            #expect(!stored)
        }
        #expect(off.entries.isEmpty)
    }

    @Test func theCacheIsBoundedOldestFirstAndPurgeable() throws {
        var cache = Cache(limits: .init(capacity: 2))
        var keys: [Cache.Key] = []
        var queries: [DNSQuery] = []
        for name in ["one.test", "two.test", "three.test"] {
            let (query, raw) = try Self.query(name, .txt)
            keys.append(Cache.Key(query, raw: raw))
            queries.append(query)
            do {
                let stored = cache.store(Self.txt(query, ttl: 300), for: keys.last!, now: start)
                #expect(stored)
            }
        }
        #expect(cache.entries.count == 2)
        #expect(cache.fresh(keys[0], for: queries[0], now: start) == nil)
        #expect(cache.fresh(keys[2], for: queries[2], now: start) != nil)
        #expect(cache.listing(now: start).map(\.name).sorted() == ["three.test", "two.test"])
        #expect(cache.purge("TWO.test") == 1)
        #expect(cache.entries.count == 1)
        #expect(cache.purge(nil) == 1)
        #expect(cache.entries.isEmpty)
    }

    /// Bytes that are not a well-formed answer never get in, whatever they claim.
    @Test func malformedResponsesAreNotCached() throws {
        let (query, raw) = try Self.query("a.test", .txt)
        let key = Cache.Key(query, raw: raw)
        let good = Self.txt(query, ttl: 60)
        var cache = Cache()
        for cut in [0, 5, 12, good.count - 1] {
            do {
                let stored = cache.store(Array(good.prefix(cut)), for: key, now: start)
                #expect(!stored, "cut at \(cut)")
            }
        }
        var badRdLength = good
        badRdLength[badRdLength.count - 10] = 0xFF
        do {
            let stored = cache.store(badRdLength, for: key, now: start)
            #expect(!stored)
        }
        var notAResponse = good
        notAResponse[2] &= 0x7F
        do {
            let stored = cache.store(notAResponse, for: key, now: start)
            #expect(!stored)
        }
        #expect(cache.entries.isEmpty)
    }
}
