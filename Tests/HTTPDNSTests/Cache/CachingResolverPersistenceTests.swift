#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Testing

@testable import HTTPDNS

@Suite struct CachingResolverPersistenceTests {
    /// A fresh directory for one test's cache file.
    static func temporaryDirectory() throws -> String {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-cache-test-XXXXXX").path
        var template = Array(base.utf8CString)
        let path = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) })
        return String(cString: path)
    }

    static func remove(_ directory: String) {
        for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            unlink("\(directory)/\(file)")
        }
        rmdir(directory)
    }

    static let epoch = Date(timeIntervalSince1970: 1_700_000_000)

    @Test func aRestartedResolverStartsWarmWithReducedTTLs() async throws {
        let directory = try Self.temporaryDirectory()
        defer { Self.remove(directory) }
        let file = "\(directory)/dns-cache.json"

        // Resolver A caches three names and writes them when it stops.
        let a = ResolverHarness(.init(cacheFile: file), wallClock: { Self.epoch })
        a.upstream.set("long.example", ipv4: "192.0.2.1", ttl: .seconds(300))
        a.upstream.set("short.example", ipv4: "192.0.2.2", ttl: .seconds(8))
        a.upstream.set("gone.example", ipv4: "192.0.2.3", ttl: .seconds(3))
        try await a.running {
            for name in ["gone.example", "short.example", "long.example"] {
                _ = try await a.resolver.resolve(name)
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["dns-cache.json"], "no temporary file left")

        // Resolver B starts 10 s later (wall clock) with a 5 s stale window.
        var configuration = CachingResolverConfiguration(cacheFile: file)
        configuration.cache.maxStale = .seconds(5)
        let b = ResolverHarness(configuration, wallClock: { Self.epoch.addingTimeInterval(10) })
        try await b.running {
            // Loading happens before the persistence loop first goes to sleep.
            await b.clock.waitForSleeper(until: b.clock.instant(.seconds(60)))
            let snapshot = b.resolver.snapshot()
            #expect(snapshot.map(\.name) == ["long.example", "short.example"], "order kept, gone.example dropped")
            #expect(snapshot[0].remaining == .seconds(290))
            #expect(snapshot[0].ipv4 == ["192.0.2.1"])
            #expect(snapshot[1].remaining == .seconds(-2))
            #expect(snapshot[1].stale)
            #expect(b.resolver.cached("long.example") == .fresh(answer("192.0.2.1", ttl: .seconds(300)), remaining: .seconds(290)))
        }
        #expect(b.upstream.calls.filter { $0 == "long.example" }.isEmpty, "served from the file, not queried")
        #expect(b.logs.all.contains { $0.level == .info && $0.metadata["cache.dropped"] == "1" })
    }

    @Test func theFileIsRewrittenEveryPersistInterval() async throws {
        let directory = try Self.temporaryDirectory()
        defer { Self.remove(directory) }
        let file = "\(directory)/cache.json"
        let harness = ResolverHarness(.init(cacheFile: file, persistInterval: .seconds(30)))
        try await harness.running {
            _ = try await harness.resolver.resolve("a.example")
            await harness.clock.waitForSleeper(until: harness.clock.instant(.seconds(30)))
            #expect(!FileManager.default.fileExists(atPath: file))
            harness.clock.advance(by: .seconds(30))
            await harness.clock.waitForSleeper(until: harness.clock.instant(.seconds(60)))
            let saved = try CacheFile.decode(#require(try CacheFileIO.contents(of: file)))
            #expect(saved.entries.map(\.name) == ["a.example"])
            #expect(saved.entries[0].expires == Self.epoch.timeIntervalSince1970 + 30)
        }
    }

    @Test func aCorruptFileIsIgnoredWithAWarning() async throws {
        let directory = try Self.temporaryDirectory()
        defer { Self.remove(directory) }
        let file = "\(directory)/cache.json"
        try CacheFileIO.replace(file, with: Array("{\"version\": 1, \"entries\": [tru".utf8))
        let harness = ResolverHarness(.init(cacheFile: file))
        try await harness.running {
            await harness.clock.waitForSleeper(until: harness.clock.instant(.seconds(60)))
            #expect(harness.resolver.snapshot().isEmpty)
            let resolved = try await harness.resolver.resolve("a.example")
            #expect(resolved.source == .query)
        }
        let warning = try #require(harness.logs.all.first { $0.level == .warning })
        #expect(warning.metadata["error.kind"] == "corrupt")
        // The shutdown write replaced the corrupt file with a good one.
        let rewritten = try CacheFile.decode(#require(try CacheFileIO.contents(of: file)))
        #expect(rewritten.entries.map(\.name) == ["a.example"])
    }

    @Test func aMissingFileIsACleanColdStart() async throws {
        let directory = try Self.temporaryDirectory()
        defer { Self.remove(directory) }
        let harness = ResolverHarness(.init(cacheFile: "\(directory)/absent.json"))
        try await harness.running {
            await harness.clock.waitForSleeper(until: harness.clock.instant(.seconds(60)))
        }
        #expect(!harness.logs.all.contains { $0.level >= .warning })
    }

    @Test func immutableCachesKeepEntriesOfAnyAge() async throws {
        let directory = try Self.temporaryDirectory()
        defer { Self.remove(directory) }
        let file = "\(directory)/cache.json"
        let record = CacheFile.Record(
            name: "old.example", answer: answer("192.0.2.1", ttl: .seconds(60)), ttl: 60,
            expires: Self.epoch.timeIntervalSince1970 - 86_400
        )
        try CacheFileIO.replace(file, with: CacheFile(saved: 0, entries: [record]).encoded())
        var configuration = CachingResolverConfiguration(hotThreshold: 100, cacheFile: file)
        configuration.cache.immutable = true
        let harness = ResolverHarness(configuration, wallClock: { Self.epoch })
        harness.upstream.stall()
        try await harness.running {
            await harness.clock.waitForSleeper(until: harness.clock.instant(.seconds(60)))
            let hit = harness.resolver.cached("old.example")
            #expect(hit == .stale(answer("192.0.2.1", ttl: .seconds(60)), age: .seconds(86_400)))
        }
    }

    @Test func cacheFileIOWritesAtomicallyAndReadsBack() throws {
        let directory = try Self.temporaryDirectory()
        defer { Self.remove(directory) }
        let file = "\(directory)/data"
        #expect(try CacheFileIO.contents(of: file) == nil)
        try CacheFileIO.replace(file, with: Array(repeating: 7, count: 200_000))
        try CacheFileIO.replace(file, with: [1, 2, 3])
        #expect(try CacheFileIO.contents(of: file) == [1, 2, 3])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["data"])
        #expect(throws: CachePersistenceError.self) {
            try CacheFileIO.replace("\(directory)/missing-dir/data", with: [1])
        }
        #expect(CacheFileIO.directoryName(of: "/var/cache/x.json") == "/var/cache")
        #expect(CacheFileIO.directoryName(of: "x.json") == ".")
        #expect(CacheFileIO.directoryName(of: "/x.json") == "/")
    }
}
