import HTTP1Codec
import HTTP1CodecOracle
import NIOCore
import Testing

/// The chunked decoder and encoder (RFC 9112 §7.1).
@Suite struct ChunkedTests {
    /// Decodes a whole chunked body in one read: the data, the trailers, what was left.
    static func decodeBody(_ text: String, role: Role = .request) throws(HTTP1CodecError) -> (String, [String]?, String) {
        var decoder = ChunkedDecoder(role: role)
        var buffer = ByteBuffer(string: text)
        var data = ""
        while true {
            switch try decoder.next(&buffer) {
            case .data(let slice):
                data += String(buffer: slice)
            case .needMoreBytes:
                return (data, ["<incomplete>"], String(buffer: buffer))
            case .end(let trailers):
                return (data, trailers?.fieldList.map { "\($0.0): \($0.1)" }, String(buffer: buffer))
            }
        }
    }

    @Test func chunksAndTheRest() throws {
        let (data, trailers, rest) = try Self.decodeBody("5\r\nhello\r\n1;a=b\r\n!\r\n0\r\n\r\nNEXT")
        #expect(data == "hello!" && trailers == nil && rest == "NEXT")
    }

    @Test func slicesShareTheReadBuffer() throws {
        var decoder = ChunkedDecoder(role: .request)
        var buffer = ByteBuffer(string: "5\r\nhello\r\n0\r\n\r\n")
        guard case .data(let slice) = try decoder.next(&buffer) else { Issue.record("no data"); return }
        let sameStorage = slice.withUnsafeReadableBytes { a in buffer.withUnsafeReadableBytes { b in a.baseAddress! + 5 == b.baseAddress! } }
        #expect(sameStorage, "a slice, not a copy")
    }

    @Test(arguments: [
        "5;name=value\r\nhello\r\n0\r\n\r\n", "5;a;b=c\r\nhello\r\n0\r\n\r\n", "5;q=\"quoted \\\" ;value\"\r\nhello\r\n0\r\n\r\n",
        "5 ;bws\r\nhello\r\n0\r\n\r\n", "5; a = b ;c\r\nhello\r\n0\r\n\r\n", "005\r\nhello\r\n0\r\n\r\n", "5\r\nhello\r\n000\r\n\r\n",
        "A\r\nhelloworld\r\n0\r\n\r\n",
    ])
    func acceptedSizeLines(_ body: String) throws {
        let (data, _, rest) = try Self.decodeBody(body)
        #expect(data.hasPrefix("hello") && rest.isEmpty, "\(body.debugDescription)")
    }

    @Test(arguments: [
        ("zz\r\nhello\r\n0\r\n\r\n", "invalid chunk size in the chunked body"),
        ("\r\nhello\r\n0\r\n\r\n", "invalid chunk size in the chunked body"),
        ("-5\r\nhello\r\n0\r\n\r\n", "invalid chunk size in the chunked body"),
        ("0x5\r\nhello\r\n0\r\n\r\n", "invalid chunk size in the chunked body"),
        ("5 \r\nhello\r\n0\r\n\r\n", "invalid chunk size in the chunked body"),
        ("FFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n", "invalid chunk size in the chunked body"),
        ("5;\r\nhello\r\n0\r\n\r\n", "invalid chunk size in the chunked body"),
        ("5;a=\r\nhello\r\n0\r\n\r\n", "invalid chunk size in the chunked body"),
        ("5;a b\r\nhello\r\n0\r\n\r\n", "invalid chunk size in the chunked body"),
        ("5;a=\"open\r\nhello\r\n0\r\n\r\n", "invalid chunk size in the chunked body"),
        ("5;a=b \r\nhello\r\n0\r\n\r\n", "invalid chunk size in the chunked body"),
        ("5\nhello\r\n0\r\n\r\n", "invalid line ending or framing (lines must end in CRLF)"),
        ("5\r\nhelloX\r\n0\r\n\r\n", "invalid line ending or framing (lines must end in CRLF)"),
        ("5\r\nhello\rX0\r\n\r\n", "invalid line ending or framing (lines must end in CRLF)"),
        ("5\r\nhello\r\n0\r\nX-A: 1\n\r\n", "invalid line ending or framing (lines must end in CRLF)"),
        ("5\r\nhello\r\n0\r\n folded: x\r\n\r\n", "invalid header field (name, value or line folding)"),
        ("5\r\nhello\r\n0\r\nBad Name: x\r\n\r\n", "invalid header field (name, value or line folding)"),
        ("5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n", "invalid Content-Length"),
        ("5\r\nhello\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n", "invalid framing: Transfer-Encoding must end in chunked (RFC 9112 §6.3), and lines must end in CRLF"),
    ])
    func refusedBodies(_ body: String, _ reason: String) {
        #expect(throws: HTTP1CodecError(.malformedRequest, reason)) { try Self.decodeBody(body) }
    }

    @Test func responseFlawsAre502() {
        #expect(throws: HTTP1CodecError(.invalidResponse, "unparseable response (invalid character in chunk size header)")) {
            try Self.decodeBody("zz\r\n", role: .response)
        }
    }

    /// 16 hex digits fit (llhttp's limit too); the data then never completes.
    @Test func largestChunkSize() throws {
        let (_, trailers, _) = try Self.decodeBody("FFFFFFFFFFFFFFFF\r\nabc")
        #expect(trailers == ["<incomplete>"])
        let padded = try Self.decodeBody("0000000000000000000005\r\nhello\r\n0\r\n\r\n")
        #expect(padded.0 == "hello")
    }

    @Test func trailersAreKeptOnlyWhenATrailerMayCarryThem() throws {
        var decoder = ChunkedDecoder(role: .response)
        var buffer = ByteBuffer(string: "0\r\nX-Sum: 1\r\nContent-Type: evil\r\nSet-Cookie: a=b\r\nHost: evil\r\nIf-Match: *\r\nServer-Timing: db\r\nTrailer: x\r\n\r\n")
        guard case .end(let trailers?) = try decoder.next(&buffer) else { Issue.record("no trailers"); return }
        #expect(trailers.fields.filter(\.kept).map { trailers.bytes.getString(at: $0.name.lowerBound, length: $0.name.count)! } == ["X-Sum", "Server-Timing"])
        var out = ByteBuffer()
        ChunkedEncoder.writeEnd(trailers, into: &out)
        #expect(String(buffer: out) == "0\r\nX-Sum: 1\r\nServer-Timing: db\r\n\r\n")
    }

    @Test func trailerSectionLimits() {
        let many = "0\r\n" + String(repeating: "X-A: b\r\n", count: 257) + "\r\n"
        #expect(throws: HTTP1CodecError(.headersTooLarge, "request headers are too large (at most 256 fields and 81920 bytes)")) {
            try Self.decodeBody(many)
        }
    }

    @Test func encoder() {
        var written: [String] = []
        ChunkedEncoder.writeChunk(ByteBuffer(string: String(repeating: "x", count: 300)), allocator: ByteBufferAllocator()) {
            written.append(String(buffer: $0))
        }
        #expect(written == ["12c\r\n", String(repeating: "x", count: 300), "\r\n"])
        written = []
        ChunkedEncoder.writeChunk(ByteBuffer(), allocator: ByteBufferAllocator()) { written.append(String(buffer: $0)) }
        #expect(written.isEmpty, "an empty chunk would end the body")
        var end = ByteBuffer()
        ChunkedEncoder.writeEnd(nil, into: &end)
        #expect(String(buffer: end) == "0\r\n\r\n")
        for length in [1, 15, 16, 255, 4096, 1 << 40] {
            var line = ByteBuffer()
            ChunkedEncoder.writeSizeLine(length, into: &line)
            #expect(String(buffer: line) == String(length, radix: 16) + "\r\n")
        }
    }

    /// What the encoder writes, the decoder reads back, whatever the reads.
    @Test func roundTrip() throws {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<200 {
            let parts = (0..<Int(rng.next() % 5)).map { _ in String(repeating: "ab", count: 1 + Int(rng.next() % 40)) }
            var wire = ByteBuffer()
            for part in parts { ChunkedEncoder.writeChunk(ByteBuffer(string: part), allocator: ByteBufferAllocator()) { wire.writeImmutableBuffer($0) } }
            ChunkedEncoder.writeEnd(nil, into: &wire)
            let text = String(buffer: wire)
            let t = decode(post("Transfer-Encoding: chunked\r\n", body: text), splits: MessageGenerator.splits(text.utf8.count + 60, &rng))
            #expect(t.bodies == [parts.joined()] && t.outcome == .clean)
        }
    }
}
