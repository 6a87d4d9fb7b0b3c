@testable import DNSListener
import HTTPDNS
import Logging
import NIOCore
import NIOEmbedded
import ProxyConfig
import ProxyUpstream
import Testing

/// The DNS listener's answers from `--hosts-file`: given at once, before the HTTPDNS cache (whose
/// service must never be asked) and before forwarding, authoritative, with `LocalRecords.ttl`.
@Suite struct LocalRecordsResponderTests {
    /// What an answer says, decoded from its bytes.
    struct Decoded {
        var rcode: UInt8
        var authoritative: Bool
        var records: [(type: UInt16, ttl: UInt32, rdata: [UInt8])]
        var authority: Int
    }

    static func query(_ name: String, type: UInt16) -> [UInt8] {
        var bytes: [UInt8] = [0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in name.split(separator: ".") {
            bytes.append(UInt8(label.utf8.count))
            bytes += Array(label.utf8)
        }
        return bytes + [0, UInt8(type >> 8), UInt8(type & 0xFF), 0, 1]
    }

    private static func decode(_ answer: [UInt8], questionLength: Int) -> Decoded {
        func u16(_ at: Int) -> UInt16 { UInt16(answer[at]) << 8 | UInt16(answer[at + 1]) }
        var records: [(type: UInt16, ttl: UInt32, rdata: [UInt8])] = []
        var offset = 12 + questionLength
        for _ in 0..<Int(u16(6)) {
            let type = u16(offset + 2)
            let ttl = UInt32(u16(offset + 6)) << 16 | UInt32(u16(offset + 8))
            let length = Int(u16(offset + 10))
            records.append((type, ttl, Array(answer[(offset + 12)..<(offset + 12 + length)])))
            offset += 12 + length
        }
        return Decoded(rcode: answer[3] & 0x0F, authoritative: answer[2] & 0x04 != 0, records: records, authority: Int(u16(8)))
    }

    /// A responder whose HTTPDNS service fails the test if it is ever asked.
    static func responder(_ hosts: String) -> DNSResponder {
        let caching = CachingResolver(
            configuration: .init(), clock: ContinuousClock(),
            query: { host in
                Issue.record("HTTPDNS asked for \(host)")
                return ResolvedAnswer(ipv4: ["192.0.2.99"], ipv6: [], ttl: .seconds(60))
            },
            stats: ResolverStats(), logger: Logger(label: "test"))
        let records = LocalRecords(path: nil, records: HostsFile.parse(Array(hosts.utf8)).records)
        return DNSResponder(
            caching: caching, routing: DNSRouting(forwardZones: DNSForwardZones(), systemOnly: SystemDNSDomains(), hasCache: true),
            forwarder: DNSForwarder(upstreams: [], timeout: .seconds(1)), health: nil, allowed: { [CIDR("0.0.0.0/0"), CIDR("::/0")].compactMap { $0 } },
            rateLimit: 0, metrics: nil, negativeTTLCap: .seconds(30), fallback: false, localRecords: records)
    }

    private func answer(_ responder: DNSResponder, _ name: String, type: UInt16) throws -> Decoded {
        let bytes = Self.query(name, type: type)
        guard case .now(let answer?) = responder.respond(bytes, from: nil, transport: .udp, on: EmbeddedEventLoop()) else {
            throw Failure(description: "\(name) type \(type) was not answered at once")
        }
        return Self.decode(answer, questionLength: bytes.count - 12)
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    @Test func namesInTheFileAreAnsweredFromItBeforeHTTPDNS() throws {
        let responder = Self.responder("127.0.0.2 origin.test www.origin.test\n127.0.0.3 origin.test\n::1 v6.test\n")
        let a = try answer(responder, "Origin.Test", type: 1)
        #expect(a.rcode == 0 && a.authoritative)
        #expect(a.records.map(\.rdata) == [[127, 0, 0, 2], [127, 0, 0, 3]])
        #expect(a.records.allSatisfy { $0.type == 1 && $0.ttl == LocalRecords.ttl })
        #expect(try answer(responder, "www.origin.test", type: 1).records.map(\.rdata) == [[127, 0, 0, 2]])
        let v6 = try answer(responder, "v6.test", type: 28)
        #expect(v6.records.map(\.rdata) == [Array(repeating: 0, count: 15) + [1]])
    }

    /// A name the file gives only IPv4 for: AAAA is NOERROR with no records (and an SOA for
    /// negative caching), not NXDOMAIN and not asked elsewhere; so is any other type.
    @Test func aFamilyOrTypeTheFileDoesNotGiveIsNoData() throws {
        let responder = Self.responder("127.0.0.2 origin.test\n")
        for type: UInt16 in [28, 15, 16, 65] {
            let nodata = try answer(responder, "origin.test", type: type)
            #expect(nodata.rcode == 0 && nodata.records.isEmpty && nodata.authority == 1 && nodata.authoritative, "type \(type)")
        }
    }

    @Test func otherNamesGoOnToTheCacheOrTheUpstreams() async throws {
        let responder = Self.responder("127.0.0.2 origin.test\n")
        guard case .later(let forwarded) = responder.respond(Self.query("other.test", type: 16), from: nil, transport: .udp, on: EmbeddedEventLoop())
        else {
            Issue.record("a name outside the file was answered at once")
            return
        }
        // Forwarded, and with no upstream resolver SERVFAIL.
        let answer = try #require(try await forwarded.get())
        #expect(answer[3] & 0x0F == 2)
    }
}
