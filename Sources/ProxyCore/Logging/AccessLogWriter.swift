#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOConcurrencyHelpers
import ProxyConfig

/// Writes access-log lines to a file descriptor (stdout or an appended file), one write(2) per line so
/// lines from different event loops never interleave.
public final class AccessLogWriter: Sendable {
    private let fd: Int32?
    private let ownsFD: Bool
    private let lock = NIOLock()

    public init(target: AccessLogDestination) throws {
        switch target {
        case .off:
            fd = nil
            ownsFD = false
        case .stdout:
            fd = STDOUT_FILENO
            ownsFD = false
        case .file(path: let path):
            let opened = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard opened >= 0 else {
                throw AccessLogError(message: "cannot open access log file '\(path)': \(String(cString: strerror(errno)))")
            }
            fd = opened
            ownsFD = true
        }
    }

    deinit {
        if ownsFD, let fd { close(fd) }
    }

    public var isEnabled: Bool { fd != nil }

    public func write(_ record: AccessLogRecord) {
        guard let fd else { return }
        var line = record.jsonLine(timestamp: Timestamp.iso8601Now())
        line += "\n"
        lock.withLock {
            FileDescriptorOutput.writeAll(line, to: fd)
        }
    }
}

enum FileDescriptorOutput {
    /// write(2) until done; a failing log destination drops the line rather than stalling the proxy.
    static func writeAll(_ text: String, to fd: Int32) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                #if canImport(Glibc)
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                #else
                let n = Musl.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                #endif
                if n < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += n
            }
        }
    }
}

public struct AccessLogError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// UTC timestamps with millisecond precision, e.g. 2026-11-22T05:21:59.123Z.
enum Timestamp {
    static func iso8601Now() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var seconds = ts.tv_sec
        var tm = tm()
        gmtime_r(&seconds, &tm)
        let ms = Int(ts.tv_nsec / 1_000_000)
        func pad(_ v: Int32, _ width: Int = 2) -> String {
            let s = String(v)
            return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
        }
        return "\(tm.tm_year + 1900)-\(pad(tm.tm_mon + 1))-\(pad(tm.tm_mday))T\(pad(tm.tm_hour)):\(pad(tm.tm_min)):\(pad(tm.tm_sec)).\(pad(Int32(ms), 3))Z"
    }
}
