import Foundation
import Glibc
import Testing
import TestSupport

/// The DoH and DNS-over-TCP listeners when the process runs out of descriptors: like the forward
/// listener (PressureTests), each leaves epoll for a moment instead of spinning on a failing
/// accept() while clients wait in its backlog, and accepts again as soon as descriptors are free.
/// The symptom is measured: the process's CPU time from /proc over 3 s.
@Suite("DNS listeners under descriptor exhaustion", .onBlockingThreads, .timeLimit(.minutes(3)))
struct DNSListenerPressureTests {
    @Test(arguments: ["doh", "dns-tcp"])
    func descriptorExhaustionPausesAcceptInsteadOfSpinning(listener: String) async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("www.example.test", .init(ipv4: ["192.0.2.10"], ttl: 300))
        // A hard limit of 64 descriptors, which the proxy cannot raise.
        let proxy = try ProxyProcess.launch(
            HTTPDNSResolutionTests.jsonProvider(service) + [
                "--system-fallback", "false", "--threads", "1", "--header-timeout", "60s",
                "--doh-listen", "127.0.0.1:0", "--dns-listen", "127.0.0.1:0", "--dns-upstream", "127.0.0.1:9",
            ],
            launcher: ["/bin/sh", "-c", "ulimit -n 64 && exec \"$0\" \"$@\""])
        defer { proxy.stop() }
        let message = listener == "doh" ? "doh listening" : "dns listening"
        let entry = try #require(proxy.waitForLog(where: { $0["message"] as? String == message }, timeout: .seconds(30)), proxy.diagnostics)
        let port = try #require(ProxyProcess.port(ofAddress: entry["address"] as? String ?? ""))

        // Idle connections to the listener until the descriptors run out; the rest wait in its backlog.
        var idle: [RawClient] = []
        for _ in 0..<100 { idle.append(try RawClient(port: port)) }
        let exhausted = try AccessControlTests.eventually { Self.openDescriptors(proxy.pid) >= 63 }
        try #require(exhausted, "descriptors never ran out (\(Self.openDescriptors(proxy.pid)) open) \(proxy.diagnostics)")

        let cpuBefore = try ProcStat.cpuSeconds(pid: proxy.pid)
        let wallBefore = ContinuousClock.now
        PressureTests.wait(.seconds(3))
        let cpu = try ProcStat.cpuSeconds(pid: proxy.pid) - cpuBefore
        let wall = ContinuousClock.now - wallBefore
        let share = cpu / (Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18)
        print("\(listener) listener, descriptors exhausted: proxy CPU \(String(format: "%.3f", cpu)) s over \(wall) = \(String(format: "%.1f", share * 100)) % of a core")
        #expect(share < 0.05, "the \(listener) listener spins while descriptors are exhausted: \(share * 100) % of a core")
        #expect(proxy.waitForLog(where: { $0["message"] as? String == "accept failed; pausing new connections for 100 ms" && $0["listener"] as? String == listener }) != nil)

        // Served again once descriptors come free (how soon: AcceptPauseHandlerTests).
        for client in idle { client.close() }
        idle.removeAll()
        let freedAt = ContinuousClock.now
        let served = try AccessControlTests.eventually {
            let client = try RawClient(port: port, timeout: .seconds(2))
            return listener == "doh" ? try Self.askDoH(client) : try Self.askTCP(client)
        }
        let recovery = ContinuousClock.now - freedAt
        print("\(listener) listener: served again \(recovery) after descriptors came free")
        #expect(served, proxy.diagnostics)
        #expect(proxy.isRunning)
    }

    static func openDescriptors(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
    }

    static func askDoH(_ client: RawClient) throws -> Bool {
        try client.send("GET /resolve?name=www.example.test&type=A HTTP/1.1\r\nHost: node\r\n\r\n")
        let response = try client.readResponse()
        return response.statusCode == 200 && response.bodyText.contains("192.0.2.10")
    }

    /// One A query for www.example.test over TCP (RFC 7766 length prefix); true when the answer
    /// carries the query's id.
    static func askTCP(_ client: RawClient) throws -> Bool {
        var query: [UInt8] = [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in ["www", "example", "test"] { query += [UInt8(label.utf8.count)] + Array(label.utf8) }
        query += [0, 0, 1, 0, 1]
        try client.send([UInt8(query.count >> 8), UInt8(query.count & 0xff)] + query)
        let length = try client.read(exactly: 2)
        let answer = try client.read(exactly: Int(length[0]) << 8 | Int(length[1]))
        return answer.count > 12 && answer[0] == 0x12 && answer[1] == 0x34
    }
}
