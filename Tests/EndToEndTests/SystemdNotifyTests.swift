import Foundation
import Glibc
import Testing

/// `Type=notify` (deploy/systemd/httpdns-proxy.service): the proxy tells systemd, through the
/// datagram socket in `NOTIFY_SOCKET`, when it is ready, when a reload starts and ends, and when it
/// starts draining. The test plays systemd's part with a socket of its own.
@Suite("systemd notifications", .onBlockingThreads, .timeLimit(.minutes(2)))
struct SystemdNotifyTests {
    /// A bound AF_UNIX datagram socket in a fresh directory; `next` waits for one message.
    final class NotifySocket {
        let path: String
        private let fd: Int32
        private let directory: String

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            path = directory + "/notify.sock"
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in bytes.enumerated() { raw[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard fd >= 0, bound == 0 else { throw POSIXError(.EADDRNOTAVAIL) }
        }

        deinit {
            close(fd)
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// The next message, or nil when none came within `timeout`.
        func next(timeout: Duration = .seconds(10)) -> String? {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(timeout.components.seconds * 1000)
            guard poll(&poller, 1, milliseconds) == 1 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(fd, &buffer, buffer.count, 0)
            return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
        }
    }

    @Test func readyReloadingAndStoppingReachTheNotifySocket() throws {
        let notify = try NotifySocket()
        let proxy = try ProxyProcess.launch(["--provider", "system"], environment: ["NOTIFY_SOCKET": notify.path])
        defer { proxy.stop() }
        // READY=1 only once the proxy listens: launch() returned after its "proxy listening" line.
        #expect(notify.next() == "READY=1", proxy.diagnostics)

        proxy.signal(SIGHUP)
        let reloading = try #require(notify.next(), "no RELOADING after SIGHUP \(proxy.diagnostics)")
        #expect(reloading.hasPrefix("RELOADING=1\nMONOTONIC_USEC="), "\(reloading)")
        #expect(Int(reloading.split(separator: "=").last ?? "") ?? 0 > 0)
        #expect(notify.next() == "READY=1")

        let reload = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/reload", proxy: nil, extra: ["-X", "POST"])
        #expect(reload.status == 200, "\(reload.bodyText)")
        #expect(notify.next()?.hasPrefix("RELOADING=1\n") == true)
        #expect(notify.next() == "READY=1")

        proxy.signal(SIGTERM)
        #expect(notify.next() == "STOPPING=1", proxy.diagnostics)
        #expect(proxy.waitForExit(timeout: .seconds(30)) == 0)
    }
}
