import Foundation
import Glibc
import Testing
import TestSupport

/// `config check` promises exit 0 only when the proxy would start: for each configuration here it
/// and `serve` must give the same verdict, and the one expected (the exit codes differ: 1 and 64).
@Suite("Config check agrees with serve", .onBlockingThreads, .timeLimit(.minutes(3)))
struct ConfigCheckAgreementTests {
    struct Case: CustomStringConvertible {
        var description: String
        var arguments: [String]
        var valid: Bool
        /// Part of the reason both must give when not valid.
        var reason: String = ""
    }

    /// Each case's arguments follow ProxyProcess's own (loopback port 0, provider system).
    static func cases(in directory: String) throws -> [Case] {
        let shaCrypt = try Tools.output("openssl", ["passwd", "-5", "five-pw"])
        func file(_ name: String, _ text: String) throws -> String {
            let path = directory + "/" + name
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let port = try Loopback.unusedPort()
        let missing = directory + "/missing"
        let ca = try TestCA()
        let leaf = try ca.issueLeaf(dnsNames: ["localhost"])
        let stranger = try ca.issueLeaf(dnsNames: ["localhost"])
        let certificate = try file("proxy.pem", leaf.certificatePEM)
        let key = try file("proxy.key", leaf.privateKeyPEM)
        let strangerKey = try file("stranger.key", stranger.privateKeyPEM)
        let tlsListen = ["--tls-listen", "127.0.0.1:0"]
        let resolver = ["--provider", "doh", "--resolver-url", "https://127.0.0.1:9/dns-query", "--system-fallback", "false"]
        return [
            Case(description: "defaults", arguments: [], valid: true),
            Case(description: "htpasswd with a sha-crypt hash", arguments: ["--proxy-auth", "@" + (try file("good.htpasswd", "five:\(shaCrypt)\n"))], valid: true),
            Case(description: "htpasswd with a plain-text password", arguments: ["--proxy-auth", "@" + (try file("plain.htpasswd", "alice:secret\n"))],
                 valid: false, reason: "plain-text passwords are refused"),
            Case(description: "htpasswd with an $apr1$ hash",
                 arguments: ["--proxy-auth", "@" + (try file("apr1.htpasswd", "bob:$apr1$abcdefgh$0123456789abcdefghijkl\n"))],
                 valid: false, reason: "unsupported hash scheme"),
            Case(description: "missing htpasswd file", arguments: ["--proxy-auth", "@\(missing).htpasswd"], valid: false, reason: "cannot open"),
            Case(description: "missing --ca-file", arguments: ["--ca-file", "\(missing).pem"], valid: false, reason: "cannot read CA file"),
            Case(description: "missing --resolver-ca-file", arguments: resolver + ["--resolver-ca-file", "\(missing).pem"],
                 valid: false, reason: "--resolver-ca-file"),
            Case(description: "--resolver-ca-file that is no certificate",
                 arguments: resolver + ["--resolver-ca-file", try file("junk.pem", "not a certificate\n")], valid: false, reason: "--resolver-ca-file"),
            Case(description: "a hosts file", arguments: ["--hosts-file", try file("good.hosts", "127.0.0.1 origin.test\n")], valid: true),
            Case(description: "missing --hosts-file", arguments: ["--hosts-file", "\(missing).hosts"], valid: false, reason: "cannot read hosts file"),
            Case(description: "--hosts-file with a bad line", arguments: ["--hosts-file", try file("bad.hosts", "127.0.0.1 a.test\n127.0.0.1\n")],
                 valid: false, reason: "line 2: no host name after 127.0.0.1"),
            Case(description: "a TLS listener", arguments: tlsListen + ["--tls-cert", certificate, "--tls-key", key], valid: true),
            Case(description: "a TLS listener, the key in the certificate file",
                 arguments: tlsListen + ["--tls-cert", try file("both.pem", leaf.certificatePEM + leaf.privateKeyPEM)], valid: true),
            Case(description: "a TLS listener without a certificate", arguments: tlsListen, valid: false, reason: "needs a certificate"),
            Case(description: "a TLS key that does not match its certificate", arguments: tlsListen + ["--tls-cert", certificate, "--tls-key", strangerKey],
                 valid: false, reason: "key values mismatch"),
            Case(description: "a missing TLS certificate", arguments: tlsListen + ["--tls-cert", "\(missing).pem", "--tls-key", key],
                 valid: false, reason: "cannot read certificate file"),
            Case(description: "two TLS certificates and one key", arguments: tlsListen + ["--tls-cert", certificate, "--tls-cert", certificate, "--tls-key", key],
                 valid: false, reason: "give one key per certificate"),
            Case(description: "a missing --tls-client-ca",
                 arguments: tlsListen + ["--tls-cert", certificate, "--tls-key", key, "--tls-client-ca", "\(missing).pem"],
                 valid: false, reason: "cannot read client CA file"),
            Case(description: "a parent proxy and routes", arguments: ["--parent-proxy", "http://127.0.0.1:9", "--route", "a.test=direct"], valid: true),
            Case(description: "an https:// parent with its CA", arguments: ["--parent-proxy", "https://127.0.0.1:9", "--parent-ca-file", certificate],
                 valid: true),
            Case(description: "an https:// parent with a missing --parent-ca-file",
                 arguments: ["--parent-proxy", "https://127.0.0.1:9", "--parent-ca-file", "\(missing).pem"],
                 valid: false, reason: "cannot read --parent-ca-file"),
            Case(description: "an https:// parent with a --parent-ca-file that is no certificate",
                 arguments: ["--parent-proxy", "https://127.0.0.1:9", "--parent-ca-file", try file("junk-parent.pem", "not a certificate\n")],
                 valid: false, reason: "TLS to the parent proxy"),
            Case(description: "a route to the parent without one", arguments: ["--route", "a.test=parent"], valid: false, reason: "but none is set"),
            Case(description: "access log in a missing directory", arguments: ["--access-log", "\(missing)/access.log"],
                 valid: false, reason: "access log"),
            Case(description: "--listen and --doh-listen on one port", arguments: ["--listen", "127.0.0.1:\(port)", "--doh-listen", "127.0.0.1:\(port)"],
                 valid: false, reason: "cannot both listen"),
            Case(description: "--listen and --dns-listen on one port", arguments: ["--listen", "127.0.0.1:\(port)", "--dns-listen", "127.0.0.1:\(port)"],
                 valid: false, reason: "cannot both listen"),
            Case(description: "--admin-listen on the wildcard address of --listen's port",
                 arguments: ["--listen", "127.0.0.1:\(port)", "--admin-listen", "0.0.0.0:\(port)"], valid: false, reason: "cannot both listen"),
        ]
    }

    @Test func configCheckAndServeGiveTheSameVerdict() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("check-agreement-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for item in try Self.cases(in: directory) {
            let fixed = ["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--provider", "system"]
            let check = try ResolveRun.run(["config", "check"] + fixed + item.arguments)
            let checkValid = check.status == 0
            #expect(checkValid == item.valid, "config check, \(item): exit \(check.status)\n\(check.stderr)")
            var serveValid = false
            var serveText = ""
            do {
                let proxy = try ProxyProcess.launch(item.arguments)
                serveValid = true
                proxy.stop()
            } catch {
                serveText = "\(error)"
            }
            #expect(serveValid == item.valid, "serve, \(item): \(serveText)")
            #expect(checkValid == serveValid, "\(item): config check \(checkValid ? "valid" : "not valid"), serve \(serveValid ? "starts" : "refuses")")
            if !item.valid {
                #expect(check.status == 1 && check.stderr.contains(item.reason), "config check, \(item): \(check.stderr)")
                #expect(serveText.contains(item.reason), "serve, \(item): \(serveText)")
            }
        }
    }

    /// A reload takes the same path: what config check refuses, a reload refuses (422) and the
    /// running configuration stays, though these options would only apply after a restart.
    @Test func aReloadRefusesWhatConfigCheckRefuses() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("check-reload-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/proxy.yaml"
        try "connect-timeout: 5s\n".write(toFile: file, atomically: true, encoding: .utf8)
        let port = try Loopback.unusedPort()
        let proxy = try ProxyProcess.launch(["--listen", "127.0.0.1:\(port)", "--config", file])
        defer { proxy.stop() }
        let edits = [
            ("access-log: \(directory)/missing/access.log\n", "access log"),
            ("doh-listen: 127.0.0.1:\(port)\n", "cannot both listen"),
            ("parent-proxy: https://127.0.0.1:9\nparent-ca-file: \(directory)/missing.pem\n", "cannot read --parent-ca-file"),
        ]
        for (yaml, reason) in edits {
            try yaml.write(toFile: file, atomically: true, encoding: .utf8)
            let reload = try ReloadTests.reload(proxy)
            #expect(reload.status == 422 && reload.bodyText.contains(reason), "\(yaml): \(reload.status) \(reload.bodyText)")
            let check = try ResolveRun.run(["config", "check", "--listen", "127.0.0.1:\(port)", "--provider", "system", "--config", file])
            #expect(check.status == 1 && check.stderr.contains(reason), "\(yaml): \(check.stderr)")
        }
        #expect(try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/healthz", proxy: nil).status == 200)
    }
}
