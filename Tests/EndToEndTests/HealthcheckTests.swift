import Foundation
import Glibc
import Testing
import TestSupport

/// `httpdns-proxy healthcheck` against a running proxy and against nothing.
@Suite("Healthcheck", .onBlockingThreads, .timeLimit(.minutes(1)))
struct HealthcheckTests {
    @Test func exitsZeroWhenHealthzAnswers200() throws {
        let proxy = try ProxyProcess.launch()
        defer { proxy.stop() }
        let run = try ResolveRun.run(["healthcheck", "--provider", "system", "--admin-listen", "127.0.0.1:\(proxy.adminPort)"])
        #expect(run.status == 0, "\(run.stderr)\n\(proxy.diagnostics)")
        #expect(run.stdout.contains("healthy: http://127.0.0.1:\(proxy.adminPort)/healthz answered 200"), "\(run.stdout)")
    }

    /// The container sets the admin address through the environment and binds the wildcard address.
    @Test func readsTheEnvironmentAndProbesAWildcardListenerThroughLoopback() throws {
        let proxy = try ProxyProcess.launch()
        defer { proxy.stop() }
        let run = try ResolveRun.run(["healthcheck"], environment: [
            "HTTPDNS_PROXY_PROVIDER": "system", "HTTPDNS_PROXY_ADMIN_LISTEN": "0.0.0.0:\(proxy.adminPort)",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("http://127.0.0.1:\(proxy.adminPort)/healthz"), "\(run.stdout)")
    }

    @Test func exitsOneWithTheReasonWhenNothingListens() throws {
        let port = try Loopback.unusedPort()
        let run = try ResolveRun.run(["healthcheck", "--provider", "system", "--admin-listen", "\(Loopback.deadHost):\(port)"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("unhealthy: http://\(Loopback.deadHost):\(port)/healthz: cannot connect: Connection refused"),
                "\(run.stderr)")
    }

    @Test func exitsOneWhenTheAdminListenerIsOff() throws {
        let run = try ResolveRun.run(["healthcheck", "--provider", "system", "--admin-listen", "off"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("the admin listener is off"), "\(run.stderr)")
    }

    /// A listener that accepts and never answers: the 2 s bound, not the connect, ends the probe.
    @Test func exitsOneWhenHealthzDoesNotAnswerWithinTwoSeconds() async throws {
        let silent = try await SilentTCPServer.start()
        let started = ContinuousClock.now
        let run = try ResolveRun.run(["healthcheck", "--provider", "system", "--admin-listen", "127.0.0.1:\(silent.port)"])
        let elapsed = ContinuousClock.now - started
        try await silent.shutdown()
        #expect(run.status == 1)
        #expect(run.stderr.contains("no answer within 2000 ms"), "\(run.stderr)")
        #expect(elapsed < .seconds(10), "took \(elapsed)")
    }

    /// An operator saves the config file with a typo while the proxy runs: the liveness probe asks
    /// the running proxy, so it stays healthy (an exit 64 there had Kubernetes restart a healthy
    /// proxy into a crash loop); once the proxy is gone it fails.
    @Test func anInvalidConfigFileOnDiskDoesNotFailTheProbeOfARunningProxy() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("healthcheck-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("proxy.yaml").path
        try "provider: system\nconnect-timeout: 5s\n".write(toFile: file, atomically: true, encoding: .utf8)
        let proxy = try ProxyProcess.launch(["--config", file])
        defer { proxy.stop() }
        let admin = "127.0.0.1:\(proxy.adminPort)"
        // The probe finds the address through the file, as a container's probe run with the proxy's
        // own environment does.
        let environment = ["HTTPDNS_PROXY_CONFIG": file]
        let edits = [
            "valid": "provider: system\nadmin-listen: \(admin)\n",
            "not YAML": "provider: system\nadmin-listen: '\(admin)'   # the admin port\nallow-destination: [10.0.0.0/8\n",
            "unknown key": "admin-listen: \(admin)\nconect-timeout: 3s\n",
            "invalid value": "admin-listen: \(admin)\nlisten: nope\nprovider: alibaba\n",
        ]
        for (name, text) in edits.sorted(by: { $0.key < $1.key }) {
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            let run = try ResolveRun.run(["healthcheck"], environment: environment)
            #expect(run.status == 0, "\(name): \(run.stderr)\n\(proxy.diagnostics)")
            #expect(run.stdout.contains("http://\(admin)/healthz answered 200"), "\(name): \(run.stdout)")
        }
        // The broken file is still there; the proxy is not.
        proxy.signal(SIGTERM)
        #expect(proxy.waitForExit(timeout: .seconds(15)) == 0, "\(proxy.diagnostics)")
        let stopped = try ResolveRun.run(["healthcheck"], environment: environment)
        #expect(stopped.status == 1, "\(stopped.stderr)")
        #expect(stopped.stderr.contains("unhealthy: http://\(admin)/healthz: cannot connect"), "\(stopped.stderr)")
    }

    /// The admin address itself must be readable: a bad value for it is an error, not a guess.
    @Test func anInvalidAdminAddressIsAnError() throws {
        let run = try ResolveRun.run(["healthcheck"], environment: ["HTTPDNS_PROXY_ADMIN_LISTEN": "nope"])
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.stderr.contains("HTTPDNS_PROXY_ADMIN_LISTEN"), "\(run.stderr)")
    }

    /// During the shutdown drain /healthz answers 503, so the container is reported unhealthy.
    @Test func exitsOneWhileTheProxyDrains() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(["--allow-destination", "127.0.0.0/8"])
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port, timeout: .seconds(20))
        try client.send("GET \(origin.url("/bytes/\(20 << 20)")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        let head = try client.readHead()
        #expect(head.statusCode == 200, "\(proxy.diagnostics)")

        proxy.signal(SIGTERM)
        let run = try ResolveRun.run(["healthcheck", "--provider", "system", "--admin-listen", "127.0.0.1:\(proxy.adminPort)"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("/healthz answered 503 draining"), "\(run.stderr)")
        _ = try client.readBody(for: head)
        client.close()
        #expect(proxy.waitForExit(timeout: .seconds(15)) == 0, "\(proxy.diagnostics)")
    }
}
