import CurlTransport
import Foundation
import HTTPDNS
import Logging
import NIOCore
import NIOPosix
import ProxyUpstream
import TestSupport

// Resolver figures for docs/benchmarks.md: the cache alone (DNSCacheBenchmark.swift), the caching
// resolver and the proxy's resolver interface on a cache hit, and cold lookups. Loopback only: the
// cold-path numbers query an in-process fake HTTPDNS service over real HTTP through libcurl.
//
//   swift run -c release --scratch-path .build-bench resolver-bench [seconds-for-cold-run]
//   (bench/bench run --scenarios resolver runs it and keeps the figures)

let entries = 10_000
let coldSeconds = Double(CommandLine.arguments.dropFirst().first ?? "") ?? 3
var results: [String: Double] = [:]

func nanoseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
}

// 1. The value-type cache alone.
let coreNs = DNSCacheBenchmark.measureLookups(entries: entries, iterations: 2_000_000)
results["cache_core_ns_per_lookup"] = coreNs
print(String(format: "DNSCache.lookup at %d entries:                      %.0f ns", entries, coreNs))

// 2. CachingResolver.cached(_:) — lock + lookup + stats, the proxy's hot path.
let names = (0..<entries).map { "host-\($0).bench.test" }
let caching = CachingResolver(
    configuration: .init(cache: .init(capacity: entries * 2)),
    clock: ContinuousClock(),
    query: { name in ResolvedAnswer(ipv4: ["127.0.0.1"], ipv6: [], ttl: .seconds(3600)) },
    stats: ResolverStats(),
    logger: Logger(label: "bench")
)
try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { try await caching.run() }
    for name in names { _ = try await caching.resolve(name) }

    let iterations = 2_000_000
    var rng = SystemRandomNumberGenerator()
    let order = (0..<4096).map { _ in Int.random(in: 0..<entries, using: &rng) }
    var hits = 0
    let start = ContinuousClock.now
    for i in 0..<iterations {
        if caching.cached(names[order[i & 4095]]) != nil { hits += 1 }
    }
    let perLookup = nanoseconds(ContinuousClock.now - start) / Double(iterations)
    precondition(hits == iterations)
    results["caching_resolver_cached_ns"] = perLookup
    print(String(format: "CachingResolver.cached at %d entries:              %.0f ns", entries, perLookup))

    // 2b. The same for one hot name (a proxy in front of a few busy origins): no cache misses.
    let hot = names[0]
    let hotStart = ContinuousClock.now
    for _ in 0..<iterations {
        if caching.cached(hot) != nil { hits += 1 }
    }
    let hotNs = nanoseconds(ContinuousClock.now - hotStart) / Double(iterations)
    results["caching_resolver_cached_hot_ns"] = hotNs
    print(String(format: "CachingResolver.cached, one hot name:                %.0f ns", hotNs))

    // 3. The proxy's resolver interface on an event loop (cache hit → succeeded future).
    let resolver = HTTPDNSUpstreamResolver(caching: caching, system: nil, stats: caching.stats, logger: Logger(label: "bench"))
    let loop = MultiThreadedEventLoopGroup.singleton.next()
    let loopNs = try await loop.submit { () -> Double in
        let iterations = 1_000_000
        let start = ContinuousClock.now
        for i in 0..<iterations {
            _ = resolver.resolve(host: names[order[i & 4095]], port: 80, on: loop)
        }
        return nanoseconds(ContinuousClock.now - start) / Double(iterations)
    }.get()
    results["upstream_resolver_cached_ns"] = loopNs
    print(String(format: "HTTPDNSUpstreamResolver.resolve (cache hit):         %.0f ns", loopNs))
    let hotLoopNs = try await loop.submit { () -> Double in
        let iterations = 1_000_000
        let start = ContinuousClock.now
        for _ in 0..<iterations {
            _ = resolver.resolve(host: hot, port: 80, on: loop)
        }
        return nanoseconds(ContinuousClock.now - start) / Double(iterations)
    }.get()
    results["upstream_resolver_cached_hot_ns"] = hotLoopNs
    print(String(format: "HTTPDNSUpstreamResolver.resolve, one hot name:        %.0f ns", hotLoopNs))
    group.cancelAll()
}

// 4b. Cold lookups per second: distinct names, one DoH JSON query each, 32 in flight.
let service = try await FakeHTTPDNSService.start()
let transport = CurlTransport()
let client = ResolverClient(
    transport: transport,
    servers: ResolverServers(ips: ["127.0.0.1"]),
    timeout: .seconds(3),
    caFile: nil,
    logger: Logger(label: "bench")
)
let provider = DoHJSONProvider(endpoint: "http://localhost:\(service.port)/resolve", signature: nil, client: client, unixTimeMillis: { 0 })

// 4a. Cold lookup latency: distinct names, one DoH JSON query at a time (median).
var coldLatencies: [Double] = []
for i in 0..<200 {
    let name = "serial-\(i).bench.test"
    service.set(name, .init(ipv4: ["127.0.0.1"], ttl: 60))
    let start = ContinuousClock.now
    if (try? await provider.resolve(name, families: .ipv4)) != nil {
        coldLatencies.append(nanoseconds(ContinuousClock.now - start) / 1000)
    }
}
coldLatencies.sort()
if !coldLatencies.isEmpty {
    results["cold_lookup_p50_us"] = coldLatencies[coldLatencies.count / 2]
    print(String(format: "cold lookup p50 (DoH JSON, fake service, 1 in flight): %.0f µs", coldLatencies[coldLatencies.count / 2]))
}

let counter = Counter()
let deadline = ContinuousClock.now + .milliseconds(Int(coldSeconds * 1000))
let coldStart = ContinuousClock.now
await withTaskGroup(of: Void.self) { group in
    for worker in 0..<32 {
        group.addTask {
            var i = 0
            while ContinuousClock.now < deadline {
                let name = "cold-\(worker)-\(i).bench.test"
                service.set(name, .init(ipv4: ["127.0.0.1"], ttl: 60))
                if (try? await provider.resolve(name, families: .ipv4)) != nil { counter.add() }
                i += 1
            }
        }
    }
}
let coldRate = Double(counter.value) / nanoseconds(ContinuousClock.now - coldStart) * 1e9
results["cold_lookups_per_second"] = coldRate
print(String(format: "cold lookups/s (DoH JSON, fake service, 32 in flight): %.0f", coldRate))
transport.shutdown()
service.stop()

let json = try JSONSerialization.data(withJSONObject: results, options: [.sortedKeys, .prettyPrinted])
print(String(decoding: json, as: UTF8.self))

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
