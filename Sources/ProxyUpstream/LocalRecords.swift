#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// `--hosts-file`: the records the DNS listener answers before HTTPDNS and the proxy dials before
/// asking any resolver. One holder for both, so they never answer a name two ways; a reload swaps
/// in the whole file at once (or keeps the previous records when the file cannot be used).
package final class LocalRecords: Sendable {
    /// The TTL of the DNS listener's answers from the file (as dnsmasq's `local-ttl` default): a
    /// client asks again for every use, so an edit takes effect at the reload, not a TTL later.
    package static let ttl: UInt32 = 0

    /// A file the proxy cannot use: unreadable, too large, or with lines that are not records.
    package struct ReadError: Error, Sendable, CustomStringConvertible {
        package var path: String
        package var reason: String
        package var problems: [HostsFile.Problem] = []

        package var description: String {
            guard let first = problems.first else { return "cannot read hosts file \(path): \(reason)" }
            let more = problems.count > 1 ? " (and \(problems.count - 1) more bad lines)" : ""
            return "hosts file \(path): \(first)\(more)"
        }
    }

    /// The file read at start and again on reload; nil without `--hosts-file`.
    package let path: String?
    package let limits: HostsFile.Limits
    private let current: Mutex<HostsFile>

    package init(path: String?, records: HostsFile = HostsFile(), limits: HostsFile.Limits = HostsFile.Limits()) {
        self.path = path
        self.limits = limits
        self.current = Mutex(records)
    }

    /// The records in use now.
    package var records: HostsFile { current.withLock { $0 } }

    /// The addresses the file gives `name`; nil when it does not name it.
    package func addresses(of name: String) -> HostsFile.Addresses? {
        current.withLock { $0.addresses(of: name) }
    }

    /// Puts `records` in use (after `readAgain` succeeded).
    package func use(_ records: HostsFile) {
        current.withLock { $0 = records }
    }

    /// The file read again (nil without one); throws, changing nothing, when it cannot be used.
    package func readAgain() throws(ReadError) -> HostsFile? {
        guard let path else { return nil }
        return try Self.load(path, limits: limits)
    }

    /// Reads and parses `path`; a file with any bad line is refused, naming the first.
    package static func load(_ path: String, limits: HostsFile.Limits = HostsFile.Limits()) throws(ReadError) -> HostsFile {
        let bytes = try readBytes(path, limit: limits.maxBytes)
        let (records, problems) = HostsFile.parse(bytes, limits: limits)
        guard problems.isEmpty else { throw ReadError(path: path, reason: "bad lines", problems: problems) }
        return records
    }

    /// At most `limit` bytes of `path`; one more is an error (a file is never used in part).
    static func readBytes(_ path: String, limit: Int) throws(ReadError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ReadError(path: path, reason: String(cString: strerror(errno)).lowercased()) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ReadError(path: path, reason: String(cString: strerror(errno)).lowercased())
            }
            if count == 0 { return bytes }
            bytes += chunk[..<count]
            if bytes.count > limit { throw ReadError(path: path, reason: "larger than \(limit) bytes") }
        }
    }
}
