import HTTP1Codec
import HTTP1CodecOracle
import NIOCore
import Testing

/// The reads a message arrives in change nothing: representative messages cut at every byte
/// position (two reads), and read one byte at a time.
@Suite struct SplitTests {
    static let requests = [
        "\r\nPOST http://a.test/x HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\nConnection: x-hop\r\nX-Hop: 1\r\n\r\n"
            + "5;ext=\"q\"\r\nhello\r\n1\r\n!\r\n0\r\nX-Sum: 1\r\n\r\n"
            + "GET http://a.test/2 HTTP/1.1\r\nHost: a.test\r\n\r\nPUT /3 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
        "GET http://a.test/ HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\nframes",
        "CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n\u{16}\u{03}\u{01}",
        "POST /x HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "GET /x HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n",
    ]

    static let responses: [(String, DifferentialInput.Method)] = [
        ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Sum: 1\r\n\r\n", .POST),
        ("HTTP/1.0 200 OK\r\nServer: x\r\n\r\nuntil close", .GET),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", .HEAD),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", .GET),
    ]

    static func check(_ text: String, _ role: Role, method: DifferentialInput.Method = .GET) {
        let bytes = Array(text.utf8)
        let whole = decode(bytes, role, method: method)
        for cut in 1..<bytes.count {
            let split = decode(bytes, role, method: method, splits: [cut])
            #expect(split == whole, "cut at \(cut) of \(text.debugDescription)")
            if split != whole { return }
        }
        let bytewise = decode(bytes, role, method: method, splits: Array(1..<bytes.count))
        #expect(bytewise == whole, "one byte at a time: \(text.debugDescription)")
    }

    @Test(arguments: requests)
    func requestsAtEveryCut(_ text: String) {
        Self.check(text, .request)
    }

    @Test(arguments: responses.indices)
    func responsesAtEveryCut(_ index: Int) {
        Self.check(Self.responses[index].0, .response, method: Self.responses[index].1)
    }

    /// A head sent a byte at a time is scanned once: an 80 KiB head in 80 K reads stays fast
    /// (a rescan per read would be 3·10⁹ byte steps).
    @Test func aLargeHeadByteByByte() throws {
        var decoder = MessageDecoder(role: .request)
        let text = "GET / HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 80 * 1024 - 40) + "\r\n\r\n"
        var buffer = ByteBuffer()
        var heads = 0
        for byte in text.utf8 {
            buffer.writeInteger(byte)
            if case .head = try decoder.next(&buffer) { heads += 1 }
        }
        #expect(heads == 1)
    }
}
