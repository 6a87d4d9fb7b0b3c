import Foundation
import Glibc

/// Optional test tools (headless Chromium, Python's pacparser): found, or skipped loudly.
///
/// `scripts/ensure-deps.sh --with-test-tools` installs them when run as root (as CI does). So a
/// missing tool skips its test only when not root; as root the test runs and fails, saying how to
/// install the tool, rather than passing without having looked.
enum ExternalTool {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    struct Result: Sendable {
        var exitCode: Int32
        var stdout: String
        var stderr: String
    }

    static var isRoot: Bool { getuid() == 0 }

    static let chromium: String? = ChildEnvironment.which("chromium") ?? ChildEnvironment.which("chromium-browser")

    static let hasPacparser: Bool = {
        guard let python = ChildEnvironment.which("python3") else { return false }
        return (try? run(python, ["-c", "import pacparser"], timeout: .seconds(20)).exitCode) == 0
    }()

    /// Python's requests with PySocks: a socks5h:// client.
    static let hasPythonSOCKS: Bool = {
        guard let python = ChildEnvironment.which("python3") else { return false }
        return (try? run(python, ["-c", "import requests, socks"], timeout: .seconds(20)).exitCode) == 0
    }()

    /// Whether a test needing `tool` runs; prints a banner to stderr when it is skipped.
    static func shouldRun(_ tool: String, present: Bool) -> Bool {
        if present || isRoot { return true }
        let banner = String(repeating: "!", count: 78)
        FileHandle.standardError.write(Data("""
            \(banner)
            !! SKIPPED: \(tool) is not installed and this is not root.
            !! Install it with: sudo scripts/ensure-deps.sh --with-test-tools
            \(banner)

            """.utf8))
        return false
    }

    /// Runs `executable` with `arguments` (environment without proxy variables), feeding `stdin`
    /// (if any), killing it after `timeout`. Output goes through temporary files, so a large DOM
    /// never blocks on a pipe.
    static func run(
        _ executable: String, _ arguments: [String], timeout: Duration, environment: [String: String] = [:], stdin: String? = nil
    ) throws -> Result {
        _ = ChildEnvironment.ignoreSIGPIPE
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-tool-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outURL = directory.appendingPathComponent("stdout")
        let errURL = directory.appendingPathComponent("stderr")
        let inURL = directory.appendingPathComponent("stdin")
        try (stdin ?? "").write(to: inURL, atomically: false, encoding: .utf8)
        let inFD = try ChildProcess.open(inURL.path, flags: O_RDONLY)
        defer { Glibc.close(inFD) }
        let outFD = try ChildProcess.open(outURL.path, flags: O_WRONLY | O_CREAT | O_TRUNC)
        defer { Glibc.close(outFD) }
        let errFD = try ChildProcess.open(errURL.path, flags: O_WRONLY | O_CREAT | O_TRUNC)
        defer { Glibc.close(errFD) }
        let child = try ChildProcess(
            executable: executable, arguments: arguments, environment: ChildEnvironment.make(overrides: environment),
            stdin: inFD, stdout: outFD, stderr: errFD)
        guard let status = child.waitForExit(timeout: timeout) else {
            child.stop()
            let stderr = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
            throw Failure(description: "\(executable) timed out after \(timeout)\nstderr: \(stderr.suffix(2000))")
        }
        return Result(
            exitCode: status,
            stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
    }
}
