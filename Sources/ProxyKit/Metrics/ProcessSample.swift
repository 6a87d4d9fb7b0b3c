#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What every Prometheus client library exports about its process (`process_*`), read from /proc
/// as the Go and Python clients read it: CPU time, resident and virtual memory, open and maximum
/// descriptors, start time.
package struct ProcessSample: Sendable, Equatable {
    /// User plus system CPU time, in seconds.
    package var cpuSeconds: Double
    package var residentBytes: Double
    package var virtualBytes: Double
    package var openDescriptors: Double
    /// The soft RLIMIT_NOFILE.
    package var maxDescriptors: Double
    /// Seconds since the Unix epoch.
    package var startTimeSeconds: Double

    /// Reads this process's figures; nil where /proc is not mounted (not Linux).
    package static func current() -> ProcessSample? {
        guard let stat = readFile("/proc/self/stat"), let systemStat = readFile("/proc/stat"),
            let bootTime = Self.bootTime(systemStat)
        else { return nil }
        var limit = rlimit()
        let maxDescriptors = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 ? Double(limit.rlim_cur) : 0
        return parse(
            stat: stat, bootTime: bootTime, ticksPerSecond: Double(sysconf(Int32(_SC_CLK_TCK))),
            pageSize: Double(sysconf(Int32(_SC_PAGESIZE))), openDescriptors: Double(countOpenDescriptors()),
            maxDescriptors: maxDescriptors)
    }

    /// The figures in a `/proc/PID/stat` line (proc(5)): utime and stime (fields 14 and 15) and
    /// starttime (22) in clock ticks, vsize (23) in bytes, rss (24) in pages. The command name
    /// (field 2) is in parentheses and may itself hold spaces and parentheses: fields are counted
    /// from the last ")".
    package static func parse(
        stat: String, bootTime: Double, ticksPerSecond: Double, pageSize: Double, openDescriptors: Double, maxDescriptors: Double
    ) -> ProcessSample? {
        guard let close = stat.lastIndex(of: ")"), ticksPerSecond > 0 else { return nil }
        // After ")": field 3 (state) is the first.
        let fields = stat[stat.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        func field(_ number: Int) -> Double? {
            let index = number - 3
            return fields.indices.contains(index) ? Double(fields[index]) : nil
        }
        guard let utime = field(14), let stime = field(15), let start = field(22), let vsize = field(23), let rss = field(24)
        else { return nil }
        return ProcessSample(
            cpuSeconds: (utime + stime) / ticksPerSecond, residentBytes: rss * pageSize, virtualBytes: vsize,
            openDescriptors: openDescriptors, maxDescriptors: maxDescriptors, startTimeSeconds: bootTime + start / ticksPerSecond)
    }

    /// `btime` of /proc/stat: when the system booted, in seconds since the epoch.
    package static func bootTime(_ systemStat: String) -> Double? {
        for line in systemStat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingPrefix(while: { $0 == " " }))
        }
        return nil
    }

    static func countOpenDescriptors() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix(2)) }
            if name.first == UInt8(ascii: ".") { continue }  // "." and ".."
            count += 1
        }
        return count - 1  // the descriptor opendir itself holds
    }

    /// A small /proc file read whole (their size reads as 0, so read to the end).
    static func readFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 { return nil }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
