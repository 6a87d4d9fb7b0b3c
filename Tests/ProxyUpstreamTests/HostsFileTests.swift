import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import ProxyUpstream

/// `--hosts-file`: the hosts-format parser byte by byte, the file's limits and read errors, and the
/// resolver that puts the file in front of the configured one.
@Suite struct HostsFileTests {
    private func parse(_ text: String, limits: HostsFile.Limits = HostsFile.Limits()) -> (records: HostsFile, problems: [HostsFile.Problem]) {
        HostsFile.parse(Array(text.utf8), limits: limits)
    }

    @Test func readsAddressesNamesAliasesAndComments() {
        let (records, problems) = parse("""
            # a comment line
            127.0.0.1\tlocalhost
            192.0.2.10 www.example.test  Alias.Example.Test. # comment after the entry
               \t
            ::1 localhost
            2001:db8::10 www.example.test
            192.0.2.11 www.example.test
            192.0.2.10 WWW.example.test
            """)
        #expect(problems.isEmpty, "\(problems)")
        #expect(records.addresses(of: "www.example.test") == .init(ipv4: ["192.0.2.10", "192.0.2.11"], ipv6: ["2001:db8::10"]))
        #expect(records.addresses(of: "WWW.Example.Test.") == records.addresses(of: "www.example.test"))
        #expect(records.addresses(of: "alias.example.test") == .init(ipv4: ["192.0.2.10"]))
        #expect(records.addresses(of: "localhost") == .init(ipv4: ["127.0.0.1"], ipv6: ["::1"]))
        #expect(records.addresses(of: "comment") == nil)
        #expect(records.addresses(of: "example.test") == nil)
        #expect(records.nameCount == 3)
        // The duplicate on the last line is dropped.
        #expect(records.entryCount == 6)
    }

    @Test func acceptsCRLFLineEndsAndAnEmptyFile() {
        let (records, problems) = HostsFile.parse(Array("192.0.2.1 a.test\r\n\r\n2001:DB8:0::1 a.test\r\n# end\r\n".utf8))
        #expect(problems.isEmpty, "\(problems)")
        #expect(records.addresses(of: "a.test") == .init(ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"]))
        let empty = HostsFile.parse([UInt8]())
        #expect(empty.problems.isEmpty && empty.records.nameCount == 0)
        #expect(parse("\n\n# only comments\n").records == HostsFile())
    }

    @Test func badLinesAreReportedWithTheirNumbers() {
        let long = String(repeating: "a", count: 64) + ".test"
        let (records, problems) = parse("""
            192.0.2.1 good.test
            192.0.2.300 bad-address.test
            fe80::1%eth0 zoned.test
            192.0.2.2
            192.0.2.3 bad..name
            192.0.2.4 \(long)
            192.0.2.5 192.0.2.6
            """)
        #expect(problems.map(\.line) == [2, 3, 4, 5, 6, 7], "\(problems)")
        #expect(problems[0].description.hasPrefix("line 2: '192.0.2.300' is not an IP address"))
        #expect(problems[1].reason.contains("zone ids"), "\(problems[1])")
        #expect(problems[2].reason == "no host name after 192.0.2.2")
        #expect(problems[3].reason == "'bad..name' is not a valid host name")
        #expect(problems[4].reason.contains("is not a valid host name"))
        #expect(problems[5].reason == "'192.0.2.6' is not a valid host name")
        #expect(records.addresses(of: "good.test") == .init(ipv4: ["192.0.2.1"]))
    }

    @Test func theLimitsRefuseTheWholeFile() {
        let text = (1...5).map { "192.0.2.\($0) host\($0).test" }.joined(separator: "\n")
        let tooMany = parse(text, limits: .init(maxEntries: 4))
        #expect(tooMany.problems == [HostsFile.Problem(line: 5, reason: "more than 4 name-address entries")])
        #expect(tooMany.records.nameCount == 0)
        let tooLarge = parse(text, limits: .init(maxBytes: 20))
        #expect(tooLarge.problems.map(\.description) == ["larger than 20 bytes"])
        #expect(parse(text, limits: .init(maxEntries: 5)).problems.isEmpty)
    }

    @Test func readingAFileNamesItAndItsFirstBadLine() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hosts-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: LocalRecords.ReadError.self) { try LocalRecords.load(path) }
        do {
            _ = try LocalRecords.load(path)
        } catch {
            #expect(error.description == "cannot read hosts file \(path): no such file or directory")
        }
        try "192.0.2.1 a.test\nnot-an-ip b.test\n192.0.2.2\n".write(toFile: path, atomically: true, encoding: .utf8)
        do {
            _ = try LocalRecords.load(path)
            Issue.record("a bad file was read")
        } catch {
            #expect(error.description.hasPrefix("hosts file \(path): line 2: 'not-an-ip' is not an IP address"), "\(error)")
            #expect(error.description.hasSuffix("(and 1 more bad lines)"), "\(error)")
        }
        try "192.0.2.1 a.test\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try LocalRecords.load(path).addresses(of: "a.test") == .init(ipv4: ["192.0.2.1"]))
        #expect(throws: LocalRecords.ReadError.self) { try LocalRecords.load(path, limits: .init(maxBytes: 4)) }
    }
}

/// The hosts file in front of the configured resolver: names it gives never reach the resolver.
@Suite struct LocalRecordsResolverTests {
    /// Answers every name with 192.0.2.99 (source httpdns), counting what it is asked.
    struct OtherResolver: UpstreamResolver {
        let asked = AskCounter()
        func resolve(host: String, port: Int, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution> {
            asked.increment()
            return eventLoop.makeSucceededFuture(Resolution(addresses: [try! SocketAddress(ipAddress: "192.0.2.99", port: port)], source: .httpdns))
        }
        func renewLease(host: String, ip: String, source: ResolutionSource, now: NIODeadline) -> ConnectionLease.Verdict {
            .renew(until: now + .seconds(60))
        }
    }

    private func records(_ text: String) -> LocalRecords {
        LocalRecords(path: nil, records: HostsFile.parse(Array(text.utf8)).records)
    }

    @Test func aNameInTheFileIsDialedAtItsAddressesWithoutAskingTheResolver() async throws {
        let loop = EmbeddedEventLoop()
        let other = OtherResolver()
        let local = records("127.0.0.2 origin.test\n::1 origin.test\n")
        let resolver = LocalRecordsResolver(records: local, inner: other)
        let resolution = try await resolver.resolve(host: "Origin.Test", port: 8080, on: loop).get()
        #expect(resolution.source == .local)
        #expect(resolution.addresses.compactMap(\.ipAddress) == ["::1", "127.0.0.2"])
        #expect(resolution.addresses.allSatisfy { $0.port == 8080 })
        #expect(other.asked.value == 0)
        #expect(resolver.fallback(after: resolution, host: "origin.test", port: 8080, reason: "refused", on: loop) == nil)

        let elsewhere = try await resolver.resolve(host: "other.test", port: 80, on: loop).get()
        #expect(elsewhere.source == .httpdns)
        #expect(other.asked.value == 1)
    }

    @Test func leasesFollowTheFileAcrossAReload() {
        let local = records("127.0.0.2 origin.test\n")
        let resolver = LocalRecordsResolver(records: local, inner: OtherResolver())
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        #expect(resolver.renewLease(host: "origin.test", ip: "127.0.0.2", source: .local, now: now) == .renew(until: now + .seconds(1)))
        #expect(resolver.renewLease(host: "other.test", ip: "192.0.2.99", source: .cache, now: now) == .renew(until: now + .seconds(60)))
        // The reload moves origin.test and adds other.test.
        local.use(HostsFile.parse(Array("127.0.0.3 origin.test\n127.0.0.4 other.test\n".utf8)).records)
        #expect(resolver.renewLease(host: "origin.test", ip: "127.0.0.2", source: .local, now: now) == .retire(reason: "address no longer in the hosts file"))
        #expect(resolver.renewLease(host: "other.test", ip: "192.0.2.99", source: .cache, now: now) == .retire(reason: "name now in the hosts file"))
        #expect(ConnectionLease(source: .local, dialedAt: now, lifetime: .zero).isCurrent(at: now) == false)
    }
}

/// A thread-safe counter for the fake resolver.
final class AskCounter: Sendable {
    private let box = NIOLockedValueBox(0)
    func increment() { box.withLockedValue { $0 += 1 } }
    var value: Int { box.withLockedValue { $0 } }
}
