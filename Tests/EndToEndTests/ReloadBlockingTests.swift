import Foundation
import Glibc
import Testing
import TestSupport

/// A reload reads files (YAML, htpasswd, static lists). When one is slow to read (NFS, a FIFO),
/// the reload waits on a thread of its own; the event loops, which the admin listener shares with
/// every proxied connection, keep serving. The symptom is measured: request latency on an open
/// connection while a `POST /reload` is blocked reading the configuration file for 2 s.
@Suite("Reload off the event loops", .onBlockingThreads, .timeLimit(.minutes(1)))
struct ReloadBlockingTests {
    @Test func aReloadBlockedOnItsFileDelaysNoRequest() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reload-fifo-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/proxy.yaml"
        let yaml = "allow-destination: [127.0.0.0/8]\n"
        try yaml.write(toFile: file, atomically: true, encoding: .utf8)
        // One event loop: the admin listener and the proxied connection share it.
        let proxy = try ProxyProcess.launch(["--provider", "system", "--threads", "1", "--config", file])
        defer { proxy.stop() }
        let keeper = try RawClient(port: proxy.port)
        let get = "GET \(origin.url("/hello")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n"
        try keeper.send(get)
        #expect(try keeper.readResponse().statusCode == 200)

        // The file becomes a FIFO: reading it blocks until the test writes into it.
        unlink(file)
        #expect(mkfifo(file, 0o600) == 0)
        let reloadAnswer = Guarded<Curl.Response?>(nil)
        let reloading = Thread {
            reloadAnswer.withLock { $0 = try? ReloadTests.reload(proxy) }
        }
        reloading.start()
        // The reload has started once a thread of the proxy waits in open() for the FIFO's writer.
        let blocked = try AccessControlTests.eventually { Self.threadWaitsForFIFOWriter(pid: proxy.pid) }
        try #require(blocked, "the proxy never started reading the configuration file \(proxy.diagnostics)")

        let clock = ContinuousClock()
        var slowest = Duration.zero
        let started = clock.now
        while clock.now - started < .seconds(2) {
            let sent = clock.now
            try keeper.send(get)
            #expect(try keeper.readResponse(timeout: .seconds(5)).statusCode == 200)
            slowest = max(slowest, clock.now - sent)
            var pause = timespec(tv_sec: 0, tv_nsec: 100_000_000)
            nanosleep(&pause, nil)
        }
        print("reload blocked on its file for 2 s: slowest request on an open connection \(slowest)")
        // Every request was answered while the reload still waited for its file (nothing has
        // been written into the FIFO yet): the reload never held the one event loop. Had it, the
        // first request would have waited for the writer below, past readResponse's deadline.
        #expect(Self.threadWaitsForFIFOWriter(pid: proxy.pid), "the reload stopped waiting for its file \(proxy.diagnostics)")

        // Unblock the reload: it completes and applies the file.
        let writer = open(file, O_WRONLY)
        #expect(writer >= 0)
        _ = yaml.withCString { write(writer, $0, strlen($0)) }
        close(writer)
        let answered = try AccessControlTests.eventually { reloadAnswer.withLock { $0 } != nil }
        #expect(answered)
        #expect(reloadAnswer.withLock { $0?.status } == 200, "\(reloadAnswer.withLock { $0?.bodyText ?? "" })")
    }

    /// Whether a thread of `pid` sleeps in the kernel's FIFO open, waiting for a writer.
    static func threadWaitsForFIFOWriter(pid: Int32) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.contains { (try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/wchan", encoding: .utf8)) == "wait_for_partner" }
    }
}
