import Foundation
import Glibc

/// A network namespace made for one test (`ip netns add`) and removed by `remove()`. Needs root
/// and iproute2; `skipReason` says loudly why a test cannot have one.
final class NetworkNamespace: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let name: String
    let ip: String
    private var removed = false

    /// Whether a namespace can be made here: the condition of the tests that need one
    /// (`.enabled(if:)`, so they are reported as skipped otherwise). Probed once per process.
    static let available: Bool = skipReason() == nil

    /// Why no namespace can be made here, or nil.
    static func skipReason() -> String? {
        guard ExternalTool.isRoot else { return "needs root (network namespaces)" }
        guard let ip = ChildEnvironment.which("ip") else { return "needs ip (iproute2)" }
        let probe = "hp-probe-\(getpid())"
        guard (try? ExternalTool.run(ip, ["netns", "add", probe], timeout: .seconds(10)).exitCode) == 0 else {
            return "'ip netns add' is not permitted here"
        }
        _ = try? ExternalTool.run(ip, ["netns", "del", probe], timeout: .seconds(10))
        return nil
    }

    init(name: String) throws {
        guard let ip = ChildEnvironment.which("ip") else { throw Failure(description: "ip (iproute2) missing") }
        self.ip = ip
        self.name = name
        _ = try? ExternalTool.run(ip, ["netns", "del", name], timeout: .seconds(10))  // a leftover of a killed run
        try run(["netns", "add", name])
        try ipHere(["link", "set", "lo", "up"])
    }

    deinit { remove() }

    /// Deletes the namespace (and every interface in it). Idempotent.
    func remove() {
        guard !removed else { return }
        removed = true
        _ = try? ExternalTool.run(ip, ["netns", "del", name], timeout: .seconds(10))
    }

    /// `ip -n NAME ARGS...`, which must succeed.
    func ipHere(_ arguments: [String]) throws {
        try run(["-n", name] + arguments)
    }

    /// `ip netns exec NAME COMMAND...`.
    func exec(_ command: [String], timeout: Duration = .seconds(10)) throws -> ExternalTool.Result {
        try ExternalTool.run(ip, ["netns", "exec", name] + command, timeout: timeout)
    }

    /// The launcher that runs a program inside the namespace (for `ProxyProcess`).
    var launcher: [String] { [ip, "netns", "exec", name] }

    private func run(_ arguments: [String]) throws {
        let result = try ExternalTool.run(ip, arguments, timeout: .seconds(10))
        guard result.exitCode == 0 else {
            throw Failure(description: "ip \(arguments.joined(separator: " ")) failed (\(result.exitCode)): \(result.stderr)")
        }
    }

    /// Runs `body` on a thread that joined the namespace, so that sockets it creates (a listener:
    /// NIO creates the socket on the calling thread, before handing it to an event loop) live in
    /// the namespace. Connections accepted later belong to the listener's namespace, whichever
    /// thread serves them. The thread ends with `body`.
    func enter<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let path = "/run/netns/\(name)"
        return try await OneThreadExecutor.run(name: "netns-\(name)", prepare: {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw Failure(description: "open \(path): \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            guard Self.setns(fd, Self.cloneNewNet) == 0 else {
                throw Failure(description: "setns \(path): \(String(cString: strerror(errno)))")
            }
        }, body)
    }

    /// CLONE_NEWNET (linux/sched.h): only a network namespace is joined.
    private static let cloneNewNet: Int32 = 0x4000_0000

    /// glibc's setns(2), looked up at run time (its declaration needs _GNU_SOURCE).
    private static let setns: @convention(c) (Int32, Int32) -> Int32 = {
        guard let symbol = dlsym(nil, "setns") else {  // nil: RTLD_DEFAULT on glibc
            return { _, _ in errno = ENOSYS; return -1 }
        }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
    }()
}
