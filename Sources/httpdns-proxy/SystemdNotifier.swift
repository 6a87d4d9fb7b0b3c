#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ServiceLifecycle

/// sd_notify(3) without libsystemd: one datagram per state change to the socket systemd names in
/// `NOTIFY_SOCKET` (a path, or an abstract name written with a leading `@`), for `Type=notify`
/// units (deploy/systemd/httpdns-proxy.service). Without the variable, nothing is sent.
struct SystemdNotifier: Sendable {
    let socketPath: String?

    init(environment: [String: String]) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Every listener the service needs is bound.
    func ready() { send("READY=1") }

    /// A reload starts; `ready()` ends it. systemd wants the monotonic time with it.
    func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        send("RELOADING=1\nMONOTONIC_USEC=\(Int(now.tv_sec) * 1_000_000 + Int(now.tv_nsec) / 1000)")
    }

    /// Draining has begun.
    func stopping() { send("STOPPING=1") }

    func send(_ state: String) {
        guard let socketPath, socketPath.utf8.count < 108 else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count)
        var message = Array(state.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(fd, &message, message.count, Int32(MSG_NOSIGNAL), socketAddress, length)
            }
        }
    }
}

/// Tells systemd STOPPING=1 when graceful shutdown begins. Last in the service group, so it is
/// the first to hear of the shutdown, before the proxy starts draining.
struct SystemdStoppingService: Service {
    let notifier: SystemdNotifier

    func run() async throws {
        try? await gracefulShutdown()
        notifier.stopping()
    }
}
