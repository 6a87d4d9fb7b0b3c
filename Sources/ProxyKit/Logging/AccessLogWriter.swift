#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOConcurrencyHelpers
import NIOPosix
import ProxyConfig

/// Writes access-log lines to a file descriptor (stdout or an appended file).
///
/// Lines are formatted straight into bytes and gathered per event loop: the first line of a loop
/// tick schedules one flush at the end of that tick (after the I/O events it is handling), so a
/// busy loop writes many lines with one write(2) and a quiet one still writes each line at once —
/// no timer, no added delay. A buffer that reaches `flushThreshold` is written immediately, so
/// memory stays bounded. Every write carries whole lines, so lines from different loops never
/// interleave. `flush()` writes what is left (shutdown).
package final class AccessLogWriter: Sendable {
    private let fd: Int32?
    private let ownsFD: Bool
    /// The file written to (nil: stdout or off), opened again by `reopen()`.
    package let path: String?
    /// Guards the file, and `tornLine`: a write that failed part-way left a line without its end.
    private let writeLock = NIOLockedValueBox(false)
    private let buffers: ThreadSpecificVariable<LineBuffer>
    private let allBuffers = NIOLockedValueBox<[LineBuffer]>([])
    static let flushThreshold = 64 * 1024
    /// JSON, nginx combined, or Squid's native lines.
    let format: AccessLogFormat

    package init(target: AccessLogDestination, format: AccessLogFormat = .json) throws {
        self.format = format
        switch target {
        case .off:
            fd = nil
            ownsFD = false
            path = nil
        case .stdout:
            fd = STDOUT_FILENO
            ownsFD = false
            path = nil
        case .file(path: let path):
            fd = try Self.open(path)
            ownsFD = true
            self.path = path
        }
        buffers = ThreadSpecificVariable()
    }

    deinit {
        flush()
        if ownsFD, let fd { close(fd) }
    }

    package var isEnabled: Bool { fd != nil }

    package func write(_ record: AccessLogRecord) {
        guard fd != nil else { return }
        guard let loop = MultiThreadedEventLoopGroup.currentEventLoop else {
            // Not on an event loop (tests, shutdown paths): one line, one write.
            let line = LineBuffer(format: format)
            line.lock.withLockVoid { line.append(record) }
            drain(line)
            return
        }
        let buffer = threadBuffer()
        let (first, full) = buffer.lock.withLock { () -> (Bool, Bool) in
            let wasEmpty = buffer.bytes.isEmpty
            buffer.append(record)
            return (wasEmpty, buffer.bytes.count >= Self.flushThreshold)
        }
        if full {
            drain(buffer)
        } else if first {
            loop.execute(buffer.drainTask(self))
        }
    }

    /// A JSON line of another kind than an access record (the DNS listener's query log), built by
    /// `fields` after the `ts` field, through the same per-loop buffers, rotation and flushing.
    package func writeJSON(_ fields: (inout LogLine) -> Void) {
        guard fd != nil else { return }
        let buffer = MultiThreadedEventLoopGroup.currentEventLoop == nil ? LineBuffer(format: .json) : threadBuffer()
        let (first, full) = buffer.lock.withLock { () -> (Bool, Bool) in
            let wasEmpty = buffer.bytes.isEmpty
            buffer.appendJSON(fields)
            return (wasEmpty, buffer.bytes.count >= Self.flushThreshold)
        }
        if full || MultiThreadedEventLoopGroup.currentEventLoop == nil {
            drain(buffer)
        } else if first, let loop = MultiThreadedEventLoopGroup.currentEventLoop {
            loop.execute(buffer.drainTask(self))
        }
    }

    /// Log rotation (SIGUSR1, SIGHUP): writes what is buffered to the file open now, then opens
    /// the path again, creating it if it was moved away, and puts the new file in place of the old
    /// one under the same descriptor (dup2), so no line is written in between or lost. Nothing to do
    /// for stdout or off. On failure the old file stays in use.
    package func reopen() throws {
        guard ownsFD, let fd, let path else { return }
        flush()
        let opened = try Self.open(path)
        defer { close(opened) }
        try writeLock.withLockedValue { tornLine in
            guard dup2(opened, fd) >= 0 else {
                throw AccessLogError(message: "cannot reopen access log file '\(path)': \(String(cString: strerror(errno)))")
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // dup2 clears it
            tornLine = false  // a line cut off in the old file does not continue in the new one
        }
    }

    /// Why `init` would fail for `target`, without creating the file: its directory must exist
    /// and be writable, or the file itself writable. (The start-up check, so `config check` does
    /// not leave an empty log behind.)
    package static func problem(target: AccessLogDestination) -> String? {
        guard case .file(let path) = target else { return nil }
        if access(path, F_OK) == 0 {
            guard access(path, W_OK) == 0 else { return "cannot open access log file '\(path)': \(String(cString: strerror(errno)))" }
            return nil
        }
        let directory = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        guard access(directory, W_OK | X_OK) == 0 else {
            return "cannot open access log file '\(path)': \(String(cString: strerror(errno))) (directory \(directory))"
        }
        return nil
    }

    private static func open(_ path: String) throws -> Int32 {
        #if canImport(Glibc)
        let opened = Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        #else
        let opened = Musl.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        #endif
        guard opened >= 0 else {
            throw AccessLogError(message: "cannot open access log file '\(path)': \(String(cString: strerror(errno)))")
        }
        return opened
    }

    /// Writes every buffered line now.
    package func flush() {
        for buffer in allBuffers.withLockedValue({ $0 }) { drain(buffer) }
    }

    private func threadBuffer() -> LineBuffer {
        if let buffer = buffers.currentValue { return buffer }
        let buffer = LineBuffer(format: format)
        buffers.currentValue = buffer
        allBuffers.withLockedValue { $0.append(buffer) }
        return buffer
    }

    fileprivate func drainNow(_ buffer: LineBuffer) { drain(buffer) }

    private func drain(_ buffer: LineBuffer) {
        guard let fd else { return }
        // Take the bytes out under the buffer's lock, write them under the file's: lines from
        // other loops wait for the file only, never for this loop's formatting.
        var bytes: [UInt8] = buffer.lock.withLock { buffer.take() }
        guard !bytes.isEmpty else { return }
        defer {
            bytes.removeAll(keepingCapacity: true)
            buffer.lock.withLockVoid { buffer.giveBack(bytes) }
        }
        writeLock.withLockedValue { tornLine in
            // A failing destination (full disk, a non-blocking pipe that is full) drops lines
            // rather than stalling the proxy; a line cut off part-way is ended first, so the
            // next line starts on its own and stays valid JSON.
            if tornLine {
                guard FileDescriptorOutput.writeAll([UInt8(ascii: "\n")], to: fd) == 1 else { return }
                tornLine = false
            }
            let written = FileDescriptorOutput.writeAll(bytes, to: fd)
            tornLine = written > 0 && written < bytes.count && bytes[written - 1] != UInt8(ascii: "\n")
        }
    }
}

/// One event loop's pending lines. Its lock is uncontended except when `flush()` runs elsewhere.
final class LineBuffer: @unchecked Sendable {
    let lock = NIOLock()
    var bytes: [UInt8] = []
    /// The storage of the bytes last written, emptied: the next lines go into it (two arrays
    /// take turns, so draining allocates nothing).
    private var spare: [UInt8] = []
    /// The end-of-tick drain, made once (a closure per scheduled drain would be an allocation).
    private var drain: (@Sendable () -> Void)?
    var clock = TimestampCache()
    var combinedClock = CombinedTimestampCache()
    /// Where the next line is formatted (its memory kept from line to line).
    private var scratch = LogLine(line: JSONLine(capacity: 1024))
    let format: AccessLogFormat

    init(format: AccessLogFormat = .json) {
        self.format = format
        bytes.reserveCapacity(4096)
    }

    /// Call with `lock` held: the pending bytes, replaced by the spare storage.
    func take() -> [UInt8] {
        let taken = bytes
        bytes = spare
        spare = []
        if bytes.capacity < 4096 { bytes.reserveCapacity(4096) }
        return taken
    }

    /// Call with `lock` held: storage whose bytes were written, for the next `take`.
    func giveBack(_ emptied: [UInt8]) {
        if spare.capacity == 0 && emptied.capacity <= AccessLogWriter.flushThreshold * 2 { spare = emptied }
    }

    /// The task that drains this buffer through `writer` (only ever one writer per buffer).
    func drainTask(_ writer: AccessLogWriter) -> @Sendable () -> Void {
        if let drain { return drain }
        // Weak both ways: a writer that goes away flushes in its deinit; no cycle through here.
        let made: @Sendable () -> Void = { [weak self, weak writer] in
            guard let self, let writer else { return }
            writer.drainNow(self)
        }
        drain = made
        return made
    }

    /// Call with `lock` held: `{"ts":"…"` then `fields`, then `}`.
    func appendJSON(_ fields: (inout LogLine) -> Void) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        scratch.line.removeAll()
        scratch.line.raw("{\"ts\":\"")
        scratch.line.append(clock.stamp(ts))
        scratch.line.raw("\"")
        fields(&scratch)
        scratch.line.raw("}\n")
        scratch.line.withBytes { bytes.append(contentsOf: $0) }
    }

    /// Call with `lock` held: the record formatted in the reused scratch line, then copied in
    /// one piece onto the pending bytes.
    func append(_ record: AccessLogRecord) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        scratch.line.removeAll()
        switch format {
        case .json: record.appendJSON(to: &scratch.line, timestamp: clock.stamp(ts))
        case .combined: record.appendCombined(to: &scratch.line, time: combinedClock.stamp(ts))
        case .squid: record.appendSquid(to: &scratch.line, seconds: Int(ts.tv_sec), milliseconds: Int(ts.tv_nsec / 1_000_000))
        }
        scratch.line.byte(UInt8(ascii: "\n"))
        scratch.line.withBytes { bytes.append(contentsOf: $0) }
    }
}

enum FileDescriptorOutput {
    /// write(2) until done; a failing log destination drops the line rather than stalling the proxy.
    static func writeAll(_ text: String, to fd: Int32) {
        var text = text
        text.withUTF8 { _ = writeAll($0, to: fd) }
    }

    /// Returns how many bytes were written (all of them unless the destination failed).
    @discardableResult
    static func writeAll(_ bytes: [UInt8], to fd: Int32) -> Int {
        bytes.withUnsafeBufferPointer { writeAll($0, to: fd) }
    }

    @discardableResult
    static func writeAll(_ buffer: UnsafeBufferPointer<UInt8>, to fd: Int32) -> Int {
        var offset = 0
        while offset < buffer.count {
            #if canImport(Glibc)
            let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            #else
            let n = Musl.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            #endif
            if n < 0 {
                if errno == EINTR { continue }
                return offset
            }
            offset += n
        }
        return offset
    }
}

package struct AccessLogError: Error, CustomStringConvertible {
    package let message: String
    package var description: String { message }
}

/// UTC timestamps with millisecond precision, e.g. 2026-11-22T05:21:59.123Z. The text up to the
/// seconds is formatted once per second.
struct TimestampCache {
    private var second: Int = -1
    private var text: [UInt8] = []  // "2026-11-22T05:21:59.123Z"

    mutating func stamp(_ ts: timespec) -> [UInt8] {
        let seconds = Int(ts.tv_sec)
        if seconds != second {
            second = seconds
            var raw = ts.tv_sec
            var tm = tm()
            gmtime_r(&raw, &tm)
            var out: [UInt8] = []
            out.reserveCapacity(24)
            func pad(_ v: Int32, _ width: Int) {
                let digits = Array(String(v).utf8)
                for _ in digits.count..<max(width, digits.count) { out.append(UInt8(ascii: "0")) }
                out += digits
            }
            pad(tm.tm_year + 1900, 4); out.append(UInt8(ascii: "-"))
            pad(tm.tm_mon + 1, 2); out.append(UInt8(ascii: "-"))
            pad(tm.tm_mday, 2); out.append(UInt8(ascii: "T"))
            pad(tm.tm_hour, 2); out.append(UInt8(ascii: ":"))
            pad(tm.tm_min, 2); out.append(UInt8(ascii: ":"))
            pad(tm.tm_sec, 2); out.append(UInt8(ascii: "."))
            out += [UInt8(ascii: "0"), UInt8(ascii: "0"), UInt8(ascii: "0"), UInt8(ascii: "Z")]
            text = out
        }
        // The milliseconds are written into the cached text in place: the copy returned last time
        // is gone by now, so this allocates nothing.
        let ms = Int(ts.tv_nsec / 1_000_000)
        let end = text.count - 1
        text[end - 3] = UInt8(ascii: "0") + UInt8(ms / 100)
        text[end - 2] = UInt8(ascii: "0") + UInt8(ms / 10 % 10)
        text[end - 1] = UInt8(ascii: "0") + UInt8(ms % 10)
        return text
    }
}

package enum Timestamp {
    package static func iso8601Now() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var cache = TimestampCache()
        return String(decoding: cache.stamp(ts), as: UTF8.self)
    }
}

/// The fields of a JSON log line other than an access record's (`AccessLogWriter.writeJSON`).
package struct LogLine: ~Copyable {
    var line: JSONLine

    /// `,"key":"value"` (escaped), or `null` for nil.
    package mutating func string(_ key: StaticString, _ value: String?) {
        line.string(key, value)
    }

    /// `,"key":123`.
    package mutating func number(_ key: StaticString, _ value: Int) {
        line.raw(",\"")
        line.raw(key)
        line.raw("\":")
        line.decimal(value)
    }

    /// `,"key":1.234` (milliseconds with three decimals), or `null`.
    package mutating func milliseconds(_ key: StaticString, _ value: Double?) {
        line.milliseconds(key, value)
    }
}
