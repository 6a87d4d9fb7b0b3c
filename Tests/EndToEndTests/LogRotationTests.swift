import Foundation
import Glibc
import Testing
import TestSupport

/// Signals an operator sends: SIGUSR1 reopens the access log (log rotation), SIGHUP reloads and
/// reopens, SIGUSR2 and SIGPIPE do nothing. And the logrotate snippet in deploy/ run by the real
/// logrotate against the real binary under load: every line is in access.log or a rotated file.
@Suite("Log rotation and signals", .onBlockingThreads, .timeLimit(.minutes(2)))
struct LogRotationTests {
    static func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-logs-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The file's lines ([] when it does not exist).
    static func lines(_ path: String) -> [String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map(String.init)
    }

    static func waitFor(_ description: String, _ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            var pause = timespec(tv_sec: 0, tv_nsec: 20_000_000)
            nanosleep(&pause, nil)
        }
        return condition()
    }

    @Test func usr1ReopensTheAccessLogHupToo_usr2AndPipeDoNotKill() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = dir.appendingPathComponent("access.log").path
        let proxy = try ProxyProcess.launch(["--allow-destination", "127.0.0.0/8", "--access-log", log])
        defer { proxy.stop() }
        func get(_ n: Int) throws {
            let response = try Curl.fetch(origin.url("/bytes/\(n)"), proxy: proxy.proxyURL)
            #expect(response.status == 200, "\(response.stderr) \(proxy.diagnostics)")
        }
        func logged(_ n: Int, in path: String) -> Bool { Self.lines(path).contains { $0.contains("\"/bytes/\(n)\"") } }

        try get(1)
        #expect(Self.waitFor("line 1") { logged(1, in: log) }, proxy.diagnostics)
        #expect(rename(log, log + ".1") == 0)
        proxy.signal(SIGUSR2)
        proxy.signal(SIGPIPE)
        #expect(proxy.waitForLog(where: { ($0["message"] as? String)?.hasPrefix("signal ignored") == true && $0["signal"] as? String == "SIGUSR2" }) != nil, proxy.diagnostics)
        // Until told, the proxy writes to the file it has open: the renamed one.
        try get(2)
        #expect(Self.waitFor("line 2") { logged(2, in: log + ".1") }, proxy.diagnostics)
        #expect(!FileManager.default.fileExists(atPath: log))

        proxy.signal(SIGUSR1)
        #expect(proxy.waitForLog(where: { $0["message"] as? String == "access log reopened" && $0["trigger"] as? String == "SIGUSR1" }) != nil, proxy.diagnostics)
        try get(3)
        #expect(Self.waitFor("line 3") { logged(3, in: log) }, proxy.diagnostics)
        #expect(!logged(3, in: log + ".1"))

        #expect(rename(log, log + ".2") == 0)
        proxy.signal(SIGHUP)
        #expect(proxy.waitForLog(where: { $0["message"] as? String == "access log reopened" && $0["trigger"] as? String == "SIGHUP" }) != nil, proxy.diagnostics)
        #expect(proxy.waitForLog(where: { $0["message"] as? String == "configuration reloaded" }) != nil, proxy.diagnostics)
        try get(4)
        #expect(Self.waitFor("line 4") { logged(4, in: log) }, proxy.diagnostics)
        #expect(Self.lines(log).count == 1 && Self.lines(log + ".1").count == 2 && Self.lines(log + ".2").count == 1)
        #expect(proxy.isRunning, "a signal killed the proxy: \(proxy.diagnostics)")
    }

    static let logrotate: String? = ChildEnvironment.which("logrotate")
        ?? (FileManager.default.isExecutableFile(atPath: "/usr/sbin/logrotate") ? "/usr/sbin/logrotate" : nil)

    /// deploy/logrotate/httpdns-proxy, found from this file: Tests/EndToEndTests/X.swift -> ../../deploy.
    static func snippet() throws -> String {
        var components = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        components.removeLast(3)
        return try String(contentsOfFile: (components + ["deploy", "logrotate", "httpdns-proxy"]).joined(separator: "/"), encoding: .utf8)
    }

    @Test(.enabled(if: ExternalTool.shouldRun("logrotate (apt-get install logrotate)", present: logrotate != nil)))
    func theLogrotateSnippetRotatesUnderLoadAndLosesNoLine() async throws {
        let logrotate = try #require(Self.logrotate, "logrotate is missing: run scripts/ensure-deps.sh --with-test-tools")
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = dir.appendingPathComponent("access.log").path
        let proxy = try ProxyProcess.launch(["--allow-destination", "127.0.0.0/8", "--access-log", log])
        defer { proxy.stop() }

        // The shipped snippet with two substitutions: the log's path, and the signal sent to this
        // proxy by pid instead of through its systemd unit.
        let snippet = try Self.snippet()
        let signalLine = "systemctl kill --kill-whom=main --signal=USR1 httpdns-proxy.service"
        #expect(snippet.contains("/var/log/httpdns-proxy/access.log {") && snippet.contains(signalLine))
        let directives = snippet.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }
        #expect(!directives.contains { $0.contains("copytruncate") }, "copytruncate loses lines")
        let config = snippet
            .replacingOccurrences(of: "/var/log/httpdns-proxy/access.log", with: log)
            .replacingOccurrences(of: signalLine, with: "kill -USR1 \(proxy.pid)")
        let configPath = dir.appendingPathComponent("logrotate.conf").path
        try config.write(toFile: configPath, atomically: false, encoding: .utf8)
        chmod(configPath, 0o644)
        let state = dir.appendingPathComponent("state").path
        func rotate() throws {
            let result = try ExternalTool.run(logrotate, ["--force", "--state", state, configPath], timeout: .seconds(30))
            #expect(result.exitCode == 0, "logrotate: \(result.stderr) \(result.stdout)")
        }

        // Load: keep-alive clients sending requests one after another while the log is rotated twice.
        let clients = 4, perClient = 1000, total = clients * perClient
        let done = Guarded((answered: 0, finished: 0, failures: [String]()))
        for _ in 0..<clients {
            Thread {
                do {
                    let client = try RawClient(port: proxy.port)
                    for n in 0..<perClient {
                        try client.send("GET \(origin.url("/bytes/\(n % 7)")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
                        let response = try client.readResponse()
                        if response.statusCode != 200 { done.withLock { $0.failures.append("status \(response.statusCode)") } }
                        done.withLock { $0.answered += 1 }
                    }
                    client.close()
                } catch {
                    done.withLock { $0.failures.append("\(error)") }
                }
                done.withLock { $0.finished += 1 }
            }.start()
        }
        #expect(Self.waitFor("lines before the first rotation") { Self.lines(log).count >= 200 }, proxy.diagnostics)
        try rotate()
        let answeredAtFirstRotation = done.withLock { $0.answered }
        #expect(Self.waitFor("lines in the new file") { Self.lines(log).count >= 200 }, proxy.diagnostics)
        try rotate()
        _ = done.wait(timeout: .seconds(60)) { $0.finished == clients ? true : nil }
        let outcome = done.withLock { $0 }
        #expect(outcome.failures.isEmpty, "\(outcome.failures.prefix(5))")
        #expect(outcome.answered == total)
        #expect(answeredAtFirstRotation < total, "the first rotation happened after the load had ended")

        // access.log, access.log.1 (delaycompress) and access.log.2.gz hold every line exactly once.
        func count() throws -> Int {
            var lines = Self.lines(log).count + Self.lines(log + ".1").count
            if FileManager.default.fileExists(atPath: log + ".2.gz") {
                let gzip = try #require(ChildEnvironment.which("gzip"))
                let unpacked = try ExternalTool.run(gzip, ["-dc", log + ".2.gz"], timeout: .seconds(30))
                lines += unpacked.stdout.split(separator: "\n").count
            }
            return lines
        }
        var counted = 0
        #expect(Self.waitFor("every line") { counted = (try? count()) ?? 0; return counted >= total })
        #expect(counted == total, "lines across access.log and its rotations: \(counted), requests: \(total)")
        #expect(FileManager.default.fileExists(atPath: log + ".1") && FileManager.default.fileExists(atPath: log + ".2.gz"))
        #expect(proxy.isRunning)
    }
}
