import Foundation
import Glibc
import Testing
import TestSupport

/// A listener whose port is taken: a configuration error (exit 64) that says which listener, which
/// address and what to do, in the configured log format, with nothing else on stderr.
@Suite("Listener address in use", .onBlockingThreads, .timeLimit(.minutes(1)))
struct ListenerBindTests {
    /// Runs the binary until it exits.
    static func run(_ arguments: [String]) throws -> ExternalTool.Result {
        try ExternalTool.run(try ProxyProcess.binaryURL().path, arguments, timeout: .seconds(30))
    }

    @Test(arguments: [("proxy", "--listen"), ("admin", "--admin-listen")])
    func aPortInUseIsAConfigurationErrorInJSON(listener: String, option: String) async throws {
        let occupier = try await TCPEchoServer.start()  // listening on 127.0.0.1
        defer { occupier.stop() }
        let taken = "127.0.0.1:\(occupier.port)"
        var arguments = ["--provider", "system", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"]
        arguments[arguments.firstIndex(of: option)! + 1] = taken
        let result = try Self.run(arguments)
        #expect(result.exitCode == 64, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        for line in lines {
            #expect(ProxyProcess.parseJSONLine(line) != nil, "not a JSON log line: \(line)")
        }
        let entry = try #require(lines.compactMap(ProxyProcess.parseJSONLine).first { $0["level"] as? String == "critical" }, "\(result.stderr)")
        #expect(entry["listener"] as? String == listener)
        #expect(entry["address"] as? String == taken)
        #expect(entry["reason"] as? String == "address already in use")
        let message = try #require(entry["message"] as? String)
        #expect(message.contains("cannot open the \(listener) listener on \(taken) (\(option)): address already in use"), "\(message)")
        #expect(message.contains("choose another port with \(option)"), "\(message)")
        #expect(!result.stderr.contains("errno: 98"), "the raw NIO error leaked: \(result.stderr)")
    }

    @Test func withTextLogsTheSameErrorIsATextLine() async throws {
        let occupier = try await TCPEchoServer.start()
        defer { occupier.stop() }
        let result = try Self.run(["--provider", "system", "--listen", "127.0.0.1:\(occupier.port)", "--admin-listen", "off", "--log-format", "text"])
        #expect(result.exitCode == 64, "\(result.stderr)")
        let line = try #require(result.stderr.split(separator: "\n").first { $0.contains(" CRITICAL ") }, "\(result.stderr)")
        #expect(line.contains("cannot open the proxy listener on 127.0.0.1:\(occupier.port) (--listen): address already in use"), "\(line)")
        #expect(!result.stderr.contains("{\""), "JSON in text mode: \(result.stderr)")
    }
}
