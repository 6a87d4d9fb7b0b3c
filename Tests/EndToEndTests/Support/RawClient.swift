import Foundation
import Glibc
import TestSupport

/// Blocking TCP client (Glibc sockets) to a loopback host:port, for hand-written HTTP exchanges.
///
/// Every call has a deadline (`timeout`, per call): a read or write that makes no progress within
/// it throws `Failure.timeout`. Received bytes are buffered internally, so heads, bodies and
/// pipelined responses can be read piecewise.
final class RawClient {
    enum Failure: Error, CustomStringConvertible {
        case connect(String, Int32)
        case io(String, Int32)
        case timeout(String)
        case eof(String)
        case malformed(String)

        var description: String {
            switch self {
            case .connect(let what, let code): return "connect to \(what) failed: \(String(cString: strerror(code))) (errno \(code))"
            case .io(let what, let code): return "\(what) failed: \(String(cString: strerror(code))) (errno \(code))"
            case .timeout(let what): return "timed out: \(what)"
            case .eof(let what): return "unexpected EOF: \(what)"
            case .malformed(let what): return "malformed: \(what)"
            }
        }

        /// True for errors that mean the peer refused, reset or closed the connection.
        var isConnectionRejected: Bool {
            switch self {
            case .connect(_, let code), .io(_, let code):
                return [ECONNREFUSED, ECONNRESET, EPIPE, ECONNABORTED].contains(code)
            case .eof:
                return true
            case .timeout, .malformed:
                return false
            }
        }
    }

    let host: String
    let port: Int
    let timeout: Duration
    private var fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var scratch = [UInt8](repeating: 0, count: 65_536)

    init(host: String = "127.0.0.1", port: Int, timeout: Duration = .seconds(10)) throws {
        self.host = host
        self.port = port
        self.timeout = timeout
        let (storage, length) = try Loopback.socketAddress(host: host, port: port)
        let fd = socket(Int32(storage.ss_family), Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure.io("socket", errno) }
        var tv = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        if tv.tv_sec == 0 && tv.tv_usec == 0 { tv.tv_usec = 1000 }
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = storage
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        guard rc == 0 else {
            let code = errno
            Glibc.close(fd)
            throw code == EINPROGRESS || code == EAGAIN
                ? Failure.timeout("connect to \(host):\(port)") : Failure.connect("\(host):\(port)", code)
        }
        self.fd = fd
    }

    deinit {
        close()
    }

    // MARK: - Writing

    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        try bytes.withUnsafeBytes { raw in
            while sent < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                if n < 0 {
                    let code = errno
                    if code == EINTR { continue }
                    if code == EAGAIN || code == EWOULDBLOCK { throw Failure.timeout("send to \(host):\(port)") }
                    throw Failure.io("send to \(host):\(port)", code)
                }
                sent += n
            }
        }
    }

    func send(_ data: Data) throws { try send([UInt8](data)) }

    func send(_ string: String) throws { try send(Array(string.utf8)) }

    /// Half-closes: sends FIN, keeps reading possible.
    func shutdownWrite() {
        if fd >= 0 { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }
    }

    func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    // MARK: - Reading

    /// Bytes received but not consumed yet.
    var bufferedCount: Int { buffer.count - start }

    /// Reads the response head (through CRLFCRLF). Bytes past it stay buffered (see `RawResponseHead.leftover`).
    func readHead(timeout: Duration? = nil) throws -> RawResponseHead {
        let deadline = deadline(timeout)
        var scanned = 0  // relative to `start`: fill() may compact the buffer
        while true {
            if let end = findHeadEnd(from: start + scanned) {
                let text = String(decoding: buffer[start..<end], as: UTF8.self)
                start = end + 4
                return try RawResponseHead.parse(text, leftover: Array(buffer[start...]))
            }
            scanned = max(0, bufferedCount - 3)
            if bufferedCount > 1 << 20 { throw Failure.malformed("response head larger than 1 MiB") }
            if try fill(deadline: deadline, what: "response head") == 0 {
                throw Failure.eof("connection closed before a complete response head (got \(bufferedCount) bytes: "
                    + "\(String(decoding: buffer[start...].prefix(200), as: UTF8.self).debugDescription))")
            }
        }
    }

    /// Reads exactly `count` bytes (buffered ones first).
    func read(exactly count: Int, timeout: Duration? = nil) throws -> [UInt8] {
        let deadline = deadline(timeout)
        while bufferedCount < count {
            if try fill(deadline: deadline, what: "\(count) bytes") == 0 {
                throw Failure.eof("got \(bufferedCount) of \(count) bytes")
            }
        }
        return consume(count)
    }

    /// Reads until the peer closes its write side. ECONNRESET is thrown as `Failure.io`.
    func readToEOF(limit: Int = 256 << 20, timeout: Duration? = nil) throws -> [UInt8] {
        let deadline = deadline(timeout)
        while try fill(deadline: deadline, what: "EOF") > 0 {
            if bufferedCount > limit { throw Failure.malformed("more than \(limit) bytes before EOF") }
        }
        return consume(bufferedCount)
    }

    /// Reads one CRLF-terminated line (without the CRLF).
    func readLine(timeout: Duration? = nil) throws -> String {
        let deadline = deadline(timeout)
        var scanned = 0  // relative to `start`: fill() may compact the buffer
        while true {
            if let cr = findCRLF(from: start + scanned) {
                let line = String(decoding: buffer[start..<cr], as: UTF8.self)
                start = cr + 2
                return line
            }
            scanned = max(0, bufferedCount - 1)
            if bufferedCount > 1 << 16 { throw Failure.malformed("line longer than 64 KiB") }
            if try fill(deadline: deadline, what: "a line") == 0 { throw Failure.eof("in the middle of a line") }
        }
    }

    /// Reads a full response: head plus body framed by Content-Length, chunked encoding, or EOF.
    /// Interim 1xx responses (other than 101) are skipped.
    func readResponse(requestMethod: String = "GET", timeout: Duration? = nil) throws -> RawHTTPResponse {
        while true {
            let head = try readHead(timeout: timeout)
            let code = head.statusCode
            if (100..<200).contains(code) && code != 101 { continue }
            let body = try readBody(for: head, requestMethod: requestMethod, timeout: timeout)
            return RawHTTPResponse(head: head, body: body)
        }
    }

    /// Reads the body that belongs to `head` (already read with `readHead`).
    func readBody(for head: RawResponseHead, requestMethod: String = "GET", timeout: Duration? = nil) throws -> [UInt8] {
        let code = head.statusCode
        let method = requestMethod.uppercased()
        if method == "HEAD" || (100..<200).contains(code) || code == 204 || code == 304
            || (method == "CONNECT" && (200..<300).contains(code)) {
            return []
        }
        if head.tokens("transfer-encoding").last == "chunked" {
            return try readChunkedBody(timeout: timeout)
        }
        if let lengthText = head.header("content-length") {
            guard let length = Int(lengthText.split(separator: ",").first?.trimmingCharacters(in: .whitespaces) ?? "") else {
                throw Failure.malformed("Content-Length \(lengthText.debugDescription)")
            }
            return try read(exactly: length, timeout: timeout)
        }
        return try readToEOF(timeout: timeout)
    }

    private func readChunkedBody(timeout: Duration?) throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let line = try readLine(timeout: timeout)
            let sizeText = line.split(separator: ";", maxSplits: 1).first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? ""
            guard let size = Int(sizeText, radix: 16) else { throw Failure.malformed("chunk size line \(line.prefix(80).debugDescription)") }
            if size == 0 {
                while try !readLine(timeout: timeout).isEmpty {}  // trailers
                return body
            }
            body.append(contentsOf: try read(exactly: size, timeout: timeout))
            guard try readLine(timeout: timeout).isEmpty else { throw Failure.malformed("missing CRLF after chunk") }
        }
    }

    // MARK: - Probing

    /// True when a new connection to host:port is refused, or accepted but closed/reset without any
    /// response to a request sent on it. False if it answers (or neither happens before the timeout).
    static func connectionIsRejected(host: String = "127.0.0.1", port: Int, timeout: Duration = .seconds(5)) -> Bool {
        let client: RawClient
        do {
            client = try RawClient(host: host, port: port, timeout: timeout)
        } catch let failure as Failure {
            return failure.isConnectionRejected
        } catch {
            return false
        }
        do {
            try client.send("GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\nConnection: close\r\n\r\n")
            let bytes = try client.readToEOF(timeout: timeout)
            return bytes.isEmpty
        } catch let failure as Failure {
            return failure.isConnectionRejected
        } catch {
            return false
        }
    }

    // MARK: - Internals

    private func deadline(_ timeout: Duration?) -> ContinuousClock.Instant {
        .now + (timeout ?? self.timeout)
    }

    /// Receives once into the buffer, waiting at most until `deadline`. Returns 0 on EOF.
    private func fill(deadline: ContinuousClock.Instant, what: String) throws -> Int {
        guard fd >= 0 else { throw Failure.io("read on closed client", EBADF) }
        while true {
            let remaining = deadline - .now
            if remaining <= .zero { throw Failure.timeout("waiting for \(what) from \(host):\(port)") }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ms = Int32(clamping: max(1, Int(remaining.timeInterval * 1000)))
            let ready = poll(&pfd, 1, ms)
            if ready < 0 {
                if errno == EINTR { continue }
                throw Failure.io("poll", errno)
            }
            if ready == 0 { continue }  // re-checks the deadline
            let fd = self.fd
            let n = scratch.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress!, $0.count, 0) }
            if n < 0 {
                let code = errno
                if code == EINTR || code == EAGAIN || code == EWOULDBLOCK { continue }
                throw Failure.io("recv from \(host):\(port)", code)
            }
            if start > 0 && start == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                start = 0
            }
            buffer.append(contentsOf: scratch[0..<n])
            return n
        }
    }

    private func consume(_ count: Int) -> [UInt8] {
        let out = Array(buffer[start..<(start + count)])
        start += count
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 1 << 20 {
            buffer.removeFirst(start)
            start = 0
        }
        return out
    }

    private func findHeadEnd(from index: Int) -> Int? {
        var i = max(index, start)
        while i + 3 < buffer.count {
            if buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    private func findCRLF(from index: Int) -> Int? {
        var i = max(index, start)
        while i + 1 < buffer.count {
            if buffer[i] == 13 && buffer[i + 1] == 10 { return i }
            i += 1
        }
        return nil
    }
}
