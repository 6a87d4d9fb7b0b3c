import Foundation
import Glibc
import Testing
import TestSupport

/// The built `httpdns-proxy` binary, run as a child process for one test.
///
/// Always started with `--listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --provider system` plus the
/// test's extra arguments. stderr (JSON log lines) and stdout (JSON access log) are captured line by
/// line on background threads. The process is SIGKILLed by `stop()`/deinit if still running.
final class ProxyProcess: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let arguments: [String]
    let binary: URL
    private let environment: [String: String]
    /// A command the binary is run through (e.g. `sh -c 'ulimit -n 64; exec "$@"' sh`); empty: none.
    private let launcher: [String]
    private var child: ChildProcess?
    private let stdoutLines = Guarded([String]())
    private let stderrLines = Guarded([String]())
    private let ports = Guarded<(proxy: Int?, admin: Int?)>((nil, nil))
    private let readersDone = Guarded(0)

    /// Listening port of the proxy (valid after `start()`).
    private(set) var port: Int = 0
    /// Listening port of the admin endpoint (valid after `start()`).
    private(set) var adminPort: Int = 0

    /// `extraArguments` are appended after the fixed ones. `binary` overrides the lookup (self-tests).
    init(_ extraArguments: [String] = [], binary: URL? = nil, environment: [String: String] = [:], launcher: [String] = []) throws {
        self.launcher = launcher
        _ = ChildEnvironment.ignoreSIGPIPE
        let binary = try binary ?? Self.binaryURL()
        self.binary = binary
        self.arguments = ["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--provider", "system"] + extraArguments
        self.environment = ChildEnvironment.make(overrides: environment)
    }

    /// Creates and starts a proxy (see `start()`).
    static func launch(_ extraArguments: [String] = [], environment: [String: String] = [:], launcher: [String] = []) throws -> ProxyProcess {
        let proxy = try ProxyProcess(extraArguments, environment: environment, launcher: launcher)
        try proxy.start()
        return proxy
    }

    deinit {
        stop()
    }

    // MARK: - Locating the binary

    /// `HTTPDNS_PROXY_BIN` if set, else `httpdns-proxy` next to the running test binary/bundle
    /// (searching its directory and parents).
    static func binaryURL() throws -> URL {
        let fileManager = FileManager.default
        if let explicit = ProcessInfo.processInfo.environment["HTTPDNS_PROXY_BIN"], !explicit.isEmpty {
            guard fileManager.isExecutableFile(atPath: explicit) else {
                throw Failure(description: "HTTPDNS_PROXY_BIN=\(explicit) is not an executable file")
            }
            return URL(fileURLWithPath: explicit)
        }
        var starts: [URL] = []
        if let argv0 = CommandLine.arguments.first, !argv0.isEmpty {
            starts.append(URL(fileURLWithPath: argv0).resolvingSymlinksInPath())
        }
        if let executable = Bundle.main.executableURL { starts.append(executable.resolvingSymlinksInPath()) }
        starts.append(Bundle.main.bundleURL.resolvingSymlinksInPath())
        starts.append(URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath())
        var tried: [String] = []
        for start in starts {
            var directory = start.deletingLastPathComponent()
            for _ in 0..<4 {  // the directory itself, then up to 3 parents (macOS: X.xctest/Contents/MacOS)
                let candidate = directory.appendingPathComponent("httpdns-proxy")
                var isDirectory: ObjCBool = false
                if !tried.contains(candidate.path) {
                    tried.append(candidate.path)
                    if fileManager.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue,
                       fileManager.isExecutableFile(atPath: candidate.path) {
                        return candidate
                    }
                }
                let parent = directory.deletingLastPathComponent()
                if parent.path == directory.path { break }
                directory = parent
            }
        }
        throw Failure(description: "httpdns-proxy binary not found (set HTTPDNS_PROXY_BIN); looked at: "
            + tried.joined(separator: ", "))
    }

    // MARK: - Lifecycle

    /// Launches the process and waits (deadline `timeout`) for the "proxy listening" and
    /// "admin listening" log lines. Throws (with stderr) if the process exits first.
    func start(timeout: Duration = .seconds(20)) throws {
        precondition(child == nil, "start() called twice")
        let stdoutPipe = try ChildProcess.makePipe()
        let stderrPipe = try ChildProcess.makePipe()
        let devNull = try ChildProcess.open("/dev/null", flags: O_RDONLY)
        let ports = self.ports
        let child: ChildProcess
        do {
            child = try ChildProcess(
                executable: launcher.first ?? binary.path,
                arguments: launcher.isEmpty ? arguments : Array(launcher.dropFirst()) + [binary.path] + arguments,
                environment: environment,
                stdin: devNull, stdout: stdoutPipe.write, stderr: stderrPipe.write,
                onExit: { _ in ports.withLock { _ in } })  // wakes start() if the proxy dies early
        } catch {
            for fd in [devNull, stdoutPipe.read, stdoutPipe.write, stderrPipe.read, stderrPipe.write] { Glibc.close(fd) }
            throw error
        }
        // Only the child holds the write ends now: the readers see EOF when it exits.
        for fd in [devNull, stdoutPipe.write, stderrPipe.write] { Glibc.close(fd) }
        self.child = child
        Self.startReader(stdoutPipe.read, into: stdoutLines, done: readersDone, name: "proxy-stdout", onLine: nil)
        Self.startReader(stderrPipe.read, into: stderrLines, done: readersDone, name: "proxy-stderr") { line in
            guard let entry = Self.parseJSONLine(line), let message = entry["message"] as? String,
                  let address = entry["address"] as? String, let port = Self.port(ofAddress: address)
            else { return }
            if message == "proxy listening" { ports.withLock { $0.proxy = port } }
            if message == "admin listening" { ports.withLock { $0.admin = port } }
        }

        enum StartOutcome { case listening(Int, Int), exited(Int32) }
        let outcome = ports.wait(timeout: timeout) { p -> StartOutcome? in
            if let proxy = p.proxy, let admin = p.admin { return .listening(proxy, admin) }
            if let status = child.exitStatus { return .exited(status) }
            return nil
        }
        switch outcome {
        case .listening(let proxy, let admin)?:
            port = proxy
            adminPort = admin
        case .exited(let status)?:
            _ = readersDone.wait(timeout: .seconds(2)) { $0 >= 2 ? true : nil }
            throw Failure(description: "httpdns-proxy exited with status \(status) before listening. "
                + "arguments: \(arguments.joined(separator: " "))\nstderr:\n\(stderrText())")
        case nil:
            stop()
            throw Failure(description: "httpdns-proxy did not log 'proxy listening' and 'admin listening' within "
                + "\(timeout). stderr:\n\(stderrText())")
        }
    }

    /// SIGKILLs the process (and its process group) if still running and waits briefly for it to be reaped.
    func stop() {
        child?.stop()
    }

    var pid: Int32 { child?.pid ?? 0 }

    var isRunning: Bool { child?.isRunning ?? false }

    /// "http://127.0.0.1:PORT", for curl's -x.
    var proxyURL: String { "http://127.0.0.1:\(port)" }

    func signal(_ signal: Int32) {
        child?.signal(signal)
    }

    /// Exit status (128+N when killed by signal N), or nil if still running at the deadline.
    func waitForExit(timeout: Duration) -> Int32? {
        child?.waitForExit(timeout: timeout)
    }

    // MARK: - Output

    func stderrText() -> String {
        stderrLines.withLock { $0.joined(separator: "\n") }
    }

    /// The last lines of stderr and stdout, for failure messages.
    var diagnostics: Comment {
        let err = stderrLines.withLock { $0.suffix(30) }.joined(separator: "\n")
        let out = stdoutLines.withLock { $0.suffix(10) }.joined(separator: "\n")
        return "proxy stderr (tail):\n\(err)\nproxy stdout (tail):\n\(out)"
    }

    func stdoutText() -> String {
        stdoutLines.withLock { $0.joined(separator: "\n") }
    }

    /// stderr log lines that parse as JSON objects.
    func logEntries() -> [[String: Any]] {
        stderrLines.withLock { $0 }.compactMap(Self.parseJSONLine)
    }

    /// Access log entries (stdout JSON lines) so far.
    func accessLogEntries() -> [[String: Any]] {
        stdoutLines.withLock { $0 }.compactMap(Self.parseJSONLine)
    }

    /// Waits for an access log entry matching `predicate`; nil on timeout.
    func waitForAccessLog(where predicate: ([String: Any]) -> Bool, timeout: Duration = .seconds(5)) -> [String: Any]? {
        stdoutLines.wait(timeout: timeout) { lines -> [String: Any]? in
            for line in lines {
                if let entry = Self.parseJSONLine(line), predicate(entry) { return entry }
            }
            return nil
        }
    }

    /// Waits until at least `count` access log entries match `predicate`; returns them, nil on timeout.
    func waitForAccessLogs(count: Int, where predicate: ([String: Any]) -> Bool, timeout: Duration = .seconds(5)) -> [[String: Any]]? {
        stdoutLines.wait(timeout: timeout) { lines -> [[String: Any]]? in
            let matching = lines.compactMap(Self.parseJSONLine).filter(predicate)
            return matching.count >= count ? matching : nil
        }
    }

    /// Waits for a stderr log entry matching `predicate`; nil on timeout.
    func waitForLog(where predicate: ([String: Any]) -> Bool, timeout: Duration = .seconds(5)) -> [String: Any]? {
        stderrLines.wait(timeout: timeout) { lines -> [String: Any]? in
            for line in lines {
                if let entry = Self.parseJSONLine(line), predicate(entry) { return entry }
            }
            return nil
        }
    }

    // MARK: - Internals

    static func parseJSONLine(_ line: String) -> [String: Any]? {
        guard line.hasPrefix("{"), let data = line.data(using: .utf8) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    /// Port of "127.0.0.1:40123" or "[::1]:40123".
    static func port(ofAddress address: String) -> Int? {
        guard let colon = address.lastIndex(of: ":") else { return nil }
        return Int(address[address.index(after: colon)...])
    }

    /// Reads `fd` until EOF on a dedicated thread, appending complete lines to `lines`.
    /// The thread owns the descriptor and closes it when done.
    private static func startReader(_ fd: Int32, into lines: Guarded<[String]>, done: Guarded<Int>, name: String,
                                    onLine: (@Sendable (String) -> Void)?) {
        let thread = Thread {
            var pending: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            func emit(_ bytes: ArraySlice<UInt8>) {
                var text = String(decoding: bytes, as: UTF8.self)
                if text.hasSuffix("\r") { text.removeLast() }
                onLine?(text)
                lines.withLock { $0.append(text) }
            }
            while true {
                let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                pending.append(contentsOf: chunk[0..<n])
                var lineStart = 0
                while let newline = pending[lineStart...].firstIndex(of: 10) {
                    emit(pending[lineStart..<newline])
                    lineStart = newline + 1
                }
                pending.removeFirst(lineStart)
            }
            if !pending.isEmpty { emit(pending[...]) }
            Glibc.close(fd)
            lines.withLock { _ in }  // final wake-up
            done.withLock { $0 += 1 }
        }
        thread.name = name
        thread.start()
    }
}
