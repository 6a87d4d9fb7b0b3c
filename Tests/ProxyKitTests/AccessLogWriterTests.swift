#if canImport(Glibc)
import Glibc
import HTTPDNS
#endif
import NIOCore
import NIOPosix
import Testing

@testable import ProxyKit

@Suite struct AccessLogWriterTests {
    private static func record(_ i: Int) -> AccessLogRecord {
        var r = AccessLogRecord(kind: .request, client: "127.0.0.1:\(i)", method: "GET")
        r.scheme = "http"
        r.host = "origin.test"
        r.port = 8080
        r.path = "/item/\(i)"
        r.status = 200
        r.bytesDown = i
        r.totalMs = Double(i) / 7
        return r
    }

    private static func temporaryPath() -> String {
        var template = Array("/tmp/access-log-test-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        close(fd)
        return String(cString: template)
    }

    private static func lines(at path: String) throws -> [String] {
        guard let file = fopen(path, "r") else { throw IOError(errnoCode: errno, reason: "fopen") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    @Test func linesWrittenOnALoopReachTheFileWholeAndInOrderAtTheEndOfTheTick() async throws {
        let path = Self.temporaryPath()
        defer { unlink(path) }
        try await MultiThreadedEventLoopGroup.withEventLoopGroup(numberOfThreads: 1) { group in
            let loop = group.next()
            let writer = try AccessLogWriter(target: .file(path: path))
            let count = 1_000  // ~250 KiB: crosses the 64 KiB threshold several times
            let pendingAfterTick = try await loop.submit { () -> Int in
                for i in 0..<count { writer.write(Self.record(i)) }
                return try Self.lines(at: path).count - 1
            }.get()
            // During the tick only whole buffers over the threshold were written: never a partial line.
            #expect(pendingAfterTick < count)
            try await loop.submit {}.get()  // the flush scheduled by the first line ran before this task
            let lines = try Self.lines(at: path)
            #expect(lines.count == count + 1)
            #expect(lines.last == "")
            for (i, line) in lines.dropLast().enumerated() {
                #expect(line == Self.record(i).jsonLine(timestamp: String(line.dropFirst(7).prefix(24))))
            }
        }
    }

    @Test func aLineWrittenOffTheLoopsIsWrittenAtOnce() throws {
        let path = Self.temporaryPath()
        defer { unlink(path) }
        let writer = try AccessLogWriter(target: .file(path: path))
        writer.write(Self.record(1))
        #expect(try Self.lines(at: path).count == 2)
    }

    @Test func flushWritesWhatALoopLeftBuffered() async throws {
        let path = Self.temporaryPath()
        defer { unlink(path) }
        try await MultiThreadedEventLoopGroup.withEventLoopGroup(numberOfThreads: 1) { group in
            let writer = try AccessLogWriter(target: .file(path: path))
            let blocker = DispatchSemaphoreLike()
            let loop = group.next()
            // The loop writes a line, then is kept busy so its scheduled flush cannot run yet. (A future
            // of the blocked loop could not be awaited here: so a continuation says the line is written.)
            await withCheckedContinuation { (written: CheckedContinuation<Void, Never>) in
                loop.execute {
                    writer.write(Self.record(5))
                    written.resume()
                    blocker.wait()
                }
            }
            #expect(try Self.lines(at: path) == [""])
            writer.flush()
            #expect(try Self.lines(at: path).count == 2)
            blocker.signal()
            try await loop.submit {}.get()
            #expect(try Self.lines(at: path).count == 2)  // flushed once, not twice
        }
    }

    @Test func millisecondsAreWrittenAsTheOldFormatterDid() {
        let values: [Double] = [0, 0.0004, 0.0005, 0.001, 0.01, 0.1, 0.5, 1, 1.5, 2.25, 12.345678, 999.9995,
                                 123_456.789, 42.0001, 0.999, 86_400_000]
        for value in values {
            var line = JSONLine(bytes: [])
            line.milliseconds("v", value)
            #expect(String(decoding: line.bytes, as: UTF8.self) == ",\"v\":" + JSONText.formatMs(value), "\(value)")
        }
    }

    @Test func stringsAreEscapedAsJSON() {
        var line = JSONLine(bytes: [])
        line.string("k", "a\"b\\c\n\r\t\u{01}\u{1f}é/\u{7f}")
        var expected = ",\"k\":"
        JSONText.appendQuoted("a\"b\\c\n\r\t\u{01}\u{1f}é/\u{7f}", to: &expected)
        #expect(String(decoding: line.bytes, as: UTF8.self) == expected)
        #expect(expected == ",\"k\":\"a\\\"b\\\\c\\n\\r\\t\\u0001\\u001fé/\u{7f}\"")
    }

    /// The line grows past its memory at every kind of piece (escapes six bytes wide included)
    /// and keeps every byte: the same text as escaping with `JSONText` into a String.
    @Test func aLineGrowsWithoutLosingBytes() {
        var line = JSONLine(capacity: 16)
        var expected = ""
        for round in 0..<200 {
            let value = String(repeating: "\u{01}\"é", count: round % 7) + "v\(round)"
            line.string("k", value)
            expected += ",\"k\":"
            JSONText.appendQuoted(value, to: &expected)
            line.decimal(round * 1_000_003)
            expected += String(round * 1_000_003)
            line.raw(" ")
            expected += " "
        }
        #expect(line.text == expected)
        #expect(line.bytes == Array(expected.utf8))
        line.removeAll()
        line.requestID(0x5f1c_09a2_0000_0003, 12)
        #expect(line.text == "5f1c09a200000003-12")
    }

    @Test func decimalsIncludingTheExtremes() {
        for value in [0, 7, 10, 99, 100, 65_535, -1, -120, Int.max, Int.min] {
            var line = JSONLine(bytes: [])
            line.decimal(value)
            #expect(String(decoding: line.bytes, as: UTF8.self) == String(value))
        }
    }

    @Test func timestampsKeepTheirShape() {
        var cache = TimestampCache()
        var ts = timespec(tv_sec: 1_795_000_000, tv_nsec: 7_000_000)
        #expect(String(decoding: cache.stamp(ts), as: UTF8.self) == "2026-11-18T11:06:40.007Z")
        ts.tv_nsec = 999_999_999
        #expect(String(decoding: cache.stamp(ts), as: UTF8.self) == "2026-11-18T11:06:40.999Z")
        ts.tv_sec += 86_400 * 44 + 3_600 * 12 + 53 * 60 + 19
        ts.tv_nsec = 40_000_000
        #expect(String(decoding: cache.stamp(ts), as: UTF8.self) == "2027-01-01T23:59:59.040Z")
    }
}

/// A semaphore from pthread primitives (Dispatch is not needed elsewhere in this target).
private final class DispatchSemaphoreLike: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var cond = pthread_cond_t()
    private var signalled = false
    init() {
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&cond, nil)
    }
    func wait() {
        pthread_mutex_lock(&mutex)
        while !signalled { pthread_cond_wait(&cond, &mutex) }
        pthread_mutex_unlock(&mutex)
    }
    func signal() {
        pthread_mutex_lock(&mutex)
        signalled = true
        pthread_cond_signal(&cond)
        pthread_mutex_unlock(&mutex)
    }
}
