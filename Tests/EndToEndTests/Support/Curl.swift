import Foundation
import Glibc

/// Runs the system `curl` with a deadline. The child's environment has no proxy variables, and `-q`
/// (ignore .curlrc) is always passed first, so only the explicit arguments (e.g. `-x`) matter.
enum Curl {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    struct Result: Sendable {
        var exitCode: Int32
        var stdout: Data
        var stderr: String
        var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// A response fetched with `fetch`: the last response head curl saw (after any 100 Continue or
    /// CONNECT 200), all heads as dumped by `-D`, and the body.
    struct Response: Sendable {
        var exitCode: Int32
        var status: Int
        var head: RawResponseHead?
        var allHeads: String
        var body: Data
        var stderr: String
        var bodyText: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? { head?.header(name) }
    }

    /// Path of curl on PATH, or throws "curl is required: apt-get install -y curl".
    static func path() throws -> String {
        guard let path = ChildEnvironment.which("curl") else {
            throw Failure(description: "curl is required: apt-get install -y curl")
        }
        return path
    }

    /// Runs `curl -q ARGS`, feeding `stdin` (if any), killing it after `timeout`.
    /// stdout/stderr go to temporary files, so large outputs never block on a pipe.
    static func run(_ arguments: [String], stdin: Data? = nil, timeout: Duration = .seconds(30)) throws -> Result {
        _ = ChildEnvironment.ignoreSIGPIPE
        let curl = try path()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("e2e-curl-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outURL = directory.appendingPathComponent("stdout")
        let errURL = directory.appendingPathComponent("stderr")
        let inURL = directory.appendingPathComponent("stdin")
        try (stdin ?? Data()).write(to: inURL)
        let inFD = try ChildProcess.open(inURL.path, flags: O_RDONLY)
        defer { Glibc.close(inFD) }
        let outFD = try ChildProcess.open(outURL.path, flags: O_WRONLY | O_CREAT | O_TRUNC)
        defer { Glibc.close(outFD) }
        let errFD = try ChildProcess.open(errURL.path, flags: O_WRONLY | O_CREAT | O_TRUNC)
        defer { Glibc.close(errFD) }

        let child = try ChildProcess(
            executable: curl, arguments: ["-q"] + arguments, environment: ChildEnvironment.make(),
            stdin: inFD, stdout: outFD, stderr: errFD)
        guard let status = child.waitForExit(timeout: timeout) else {
            child.stop()
            let stderr = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
            throw Failure(description: "curl timed out after \(timeout): curl \(arguments.joined(separator: " "))\nstderr: \(stderr)")
        }
        let stdout = (try? Data(contentsOf: outURL)) ?? Data()
        let stderr = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        return Result(exitCode: status, stdout: stdout, stderr: stderr)
    }

    /// `curl -sS -x PROXY -D <heads> [extra] URL`: the body comes back in `body`.
    /// `proxy` nil means a direct request (`--noproxy '*'`).
    static func fetch(
        _ url: String, proxy: String?, extra: [String] = [], stdin: Data? = nil, timeout: Duration = .seconds(30)
    ) throws -> Response {
        let headsFile = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-heads-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: headsFile) }
        var arguments = ["-sS", "-D", headsFile.path]
        if let proxy {
            arguments += ["-x", proxy]
        } else {
            arguments += ["--noproxy", "*"]
        }
        arguments += extra + [url]
        let result = try run(arguments, stdin: stdin, timeout: timeout)
        let heads = (try? String(contentsOf: headsFile, encoding: .utf8)) ?? ""
        let blocks = heads.components(separatedBy: "\r\n\r\n").filter { $0.hasPrefix("HTTP/") }
        let head = try blocks.last.map { try RawResponseHead.parse($0, leftover: []) }
        return Response(
            exitCode: result.exitCode, status: head?.statusCode ?? 0, head: head, allHeads: heads,
            body: result.stdout, stderr: result.stderr)
    }
}
