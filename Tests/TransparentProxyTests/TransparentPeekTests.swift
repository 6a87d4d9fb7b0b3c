import Testing

@testable import TransparentProxy

/// Builds ClientHellos byte by byte (RFC 8446 4.1.2, RFC 6066 3) for the parser's tests.
enum HelloBytes {
    static func u16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    static func u24(_ value: Int) -> [UInt8] { [UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }

    static func serverNameExtension(_ name: String, type: UInt8 = 0) -> [UInt8] {
        let host = Array(name.utf8)
        let entry = [type] + u16(host.count) + host
        let body = u16(entry.count) + entry
        return u16(0) + u16(body.count) + body
    }

    /// The handshake message (type 1, length, body).
    static func handshake(sni: String?, extraExtensionBytes: Int = 0, extensionsOverride: [UInt8]? = nil) -> [UInt8] {
        var extensions: [UInt8] = []
        // supported_versions (43) first, like real clients, then SNI, then padding (21).
        extensions += u16(43) + u16(3) + [2, 0x03, 0x04]
        if let sni { extensions += serverNameExtension(sni) }
        if extraExtensionBytes > 0 { extensions += u16(21) + u16(extraExtensionBytes) + [UInt8](repeating: 0, count: extraExtensionBytes) }
        var body: [UInt8] = [0x03, 0x03] + [UInt8](repeating: 7, count: 32)
        body += [32] + [UInt8](repeating: 1, count: 32)
        body += u16(4) + [0x13, 0x01, 0x13, 0x02]
        body += [1, 0]
        let block = extensionsOverride ?? extensions
        body += u16(block.count) + block
        return [1] + u24(body.count) + body
    }

    /// `handshake` in TLS records, cut into fragments of at most `fragment` bytes.
    static func records(_ handshake: [UInt8], fragment: Int = 16384) -> [UInt8] {
        var out: [UInt8] = []
        var offset = 0
        while offset < handshake.count {
            let piece = Array(handshake[offset..<min(handshake.count, offset + fragment)])
            out += [0x16, 0x03, 0x01] + u16(piece.count) + piece
            offset += piece.count
        }
        return out
    }

    static func hello(_ sni: String?) -> [UInt8] { records(handshake(sni: sni)) }
}

@Suite struct TransparentPeekTests {
    @Test func serverNameOfOneRecord() {
        #expect(TransparentPeek.classify(HelloBytes.hello("origin.test")) == .tls(serverName: "origin.test"))
    }

    @Test func serverNameIsLowerCasedAndLosesItsTrailingDot() {
        #expect(TransparentPeek.classify(HelloBytes.hello("Origin.TEST.")) == .tls(serverName: "origin.test"))
    }

    @Test func everyPrefixNeedsMoreAndOnlyTheWholeHelloAnswers() {
        let bytes = HelloBytes.hello("origin.test")
        for count in 0..<bytes.count {
            #expect(TransparentPeek.classify(bytes[0..<count]) == .needMore, "prefix of \(count) bytes")
        }
        #expect(TransparentPeek.classify(bytes) == .tls(serverName: "origin.test"))
    }

    @Test func helloSplitOverThreeRecords() {
        let handshake = HelloBytes.handshake(sni: "split.origin.test")
        let bytes = HelloBytes.records(handshake, fragment: handshake.count / 3 + 1)
        #expect(bytes.filter { $0 == 0x16 }.count >= 3)
        #expect(TransparentPeek.classify(bytes) == .tls(serverName: "split.origin.test"))
        // And a prefix ending inside the second record still waits.
        #expect(TransparentPeek.classify(bytes[0..<(handshake.count / 2)]) == .needMore)
    }

    @Test func bytesAfterTheHelloAreIgnored() {
        let bytes = HelloBytes.hello("origin.test") + [0x14, 0x03, 0x03, 0x00, 0x01, 0x01]
        #expect(TransparentPeek.classify(bytes) == .tls(serverName: "origin.test"))
    }

    @Test func helloWithoutServerName() {
        #expect(TransparentPeek.classify(HelloBytes.hello(nil)) == .tls(serverName: nil))
        // No extensions block at all (TLS 1.0 style).
        var body: [UInt8] = [0x03, 0x01] + [UInt8](repeating: 0, count: 32) + [0] + HelloBytes.u16(2) + [0x00, 0x2F] + [1, 0]
        body = [1] + HelloBytes.u24(body.count) + body
        #expect(TransparentPeek.classify(HelloBytes.records(body)) == .tls(serverName: nil))
    }

    @Test func serverNamesThatAreNoHostNameGiveNone() {
        for name in ["10.0.0.1", "a..b", "bad name", "évil.test", "a/b", "-", "-a.test", "a-.test", String(repeating: "a", count: 64) + ".test"] {
            #expect(TransparentPeek.classify(HelloBytes.hello(name)) == .tls(serverName: nil), "\(name)")
        }
        // A host_name entry of another type is skipped.
        let other = HelloBytes.serverNameExtension("origin.test", type: 1)
        let handshake = HelloBytes.handshake(sni: nil, extensionsOverride: other)
        #expect(TransparentPeek.classify(HelloBytes.records(handshake)) == .tls(serverName: nil))
    }

    @Test func seventyKilobyteExtensionBlockIsTooLargeFromItsLengthAlone() {
        let handshake = HelloBytes.handshake(sni: "origin.test", extraExtensionBytes: 70_000)
        // Only the first record (16 KiB) has arrived: the handshake length already says too large.
        let first = Array(HelloBytes.records(handshake).prefix(5 + 16384))
        #expect(TransparentPeek.classify(first) == .tooLarge)
        #expect(TransparentPeek.classify(first.prefix(9)) == .tooLarge)
    }

    @Test func tinyRecordsCannotGrowTheBufferPastItsLimit() {
        // 1-byte fragments: 6 bytes on the wire per handshake byte.
        let handshake = HelloBytes.handshake(sni: "origin.test", extraExtensionBytes: 4000)
        let bytes = HelloBytes.records(handshake, fragment: 1)
        #expect(bytes.count > TransparentPeek.bufferLimit)
        #expect(TransparentPeek.classify(bytes) == .tooLarge)
    }

    @Test func malformedHellos() {
        let good = HelloBytes.hello("origin.test")
        var wrongType = good
        wrongType[5] = 2  // ServerHello
        #expect(isMalformed(TransparentPeek.classify(wrongType)))
        var badVersion = good
        badVersion[1] = 0x02
        #expect(isMalformed(TransparentPeek.classify(badVersion)))
        var zeroRecord = good
        zeroRecord[3] = 0
        zeroRecord[4] = 0
        #expect(isMalformed(TransparentPeek.classify(zeroRecord)))
        // An extensions length running past the ClientHello.
        let overrun = HelloBytes.handshake(sni: nil, extensionsOverride: HelloBytes.u16(0) + HelloBytes.u16(500) + [1, 2, 3])
        #expect(isMalformed(TransparentPeek.classify(HelloBytes.records(overrun))))
        // A non-handshake record in the middle of the ClientHello.
        let handshake = HelloBytes.handshake(sni: "origin.test")
        let first = HelloBytes.records(Array(handshake.prefix(20)))
        let alert: [UInt8] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]
        #expect(isMalformed(TransparentPeek.classify(first + alert)))
        // Truncated inside the body: the declared handshake length is larger than what the
        // record carries; a record header claiming a 20000-byte record.
        #expect(isMalformed(TransparentPeek.classify([0x16, 0x03, 0x01, 0x4E, 0x20, 0x01])))
    }

    @Test func truncatedHelloWaitsForMore() {
        let bytes = HelloBytes.hello("origin.test")
        #expect(TransparentPeek.classify(bytes.dropLast(10)) == .needMore)
    }

    @Test func garbageAndServerFirstAreUnknown() {
        #expect(TransparentPeek.classify(Array("SSH-2.0-OpenSSH_9.2\r\n".utf8)) == .unknown)
        #expect(TransparentPeek.classify([0x00, 0xFF, 0x13]) == .unknown)
        #expect(TransparentPeek.classify(Array("get / HTTP/1.1\r\n".utf8)) == .unknown)
        #expect(TransparentPeek.classify([UInt8]()) == .needMore)
    }

    private func isMalformed(_ peek: TransparentPeek) -> Bool {
        if case .malformed = peek { return true }
        return false
    }
}

@Suite struct TransparentHTTPPeekTests {
    func peek(_ text: String) -> TransparentPeek { TransparentPeek.classify(Array(text.utf8)) }

    @Test func hostOfARequestHead() {
        #expect(peek("GET /a HTTP/1.1\r\nHost: Origin.Test:8000\r\nAccept: */*\r\n\r\n") == .http(host: "origin.test"))
        #expect(peek("POST / HTTP/1.1\r\nhost:origin.test\r\n\r\nbody") == .http(host: "origin.test"))
        #expect(peek("GET / HTTP/1.0\nHost: origin.test\n\n") == .http(host: "origin.test"))
    }

    @Test func incompleteHeadsWait() {
        #expect(peek("GE") == .needMore)
        #expect(peek("GET / HTTP/1.1\r\nHost: origin.test\r\n") == .needMore)
    }

    @Test func noUsableHost() {
        #expect(peek("GET / HTTP/1.0\r\n\r\n") == .http(host: nil))
        #expect(peek("GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n") == .http(host: nil))
        #expect(peek("GET / HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n") == .http(host: nil))
        #expect(peek("GET / HTTP/1.1\r\nHost: a.test:x\r\n\r\n") == .http(host: nil))
        #expect(peek("GET / HTTP/1.1\r\nHost: a@b.test\r\n\r\n") == .http(host: nil))
    }

    @Test func notHTTPAfterAll() {
        #expect(peek("GET nothing\r\n\r\n") == .unknown)
    }

    @Test func endlessHeadIsTooLarge() {
        let head = "GET / HTTP/1.1\r\n" + String(repeating: "X-Filler: 0123456789\r\n", count: 900)
        #expect(head.utf8.count > TransparentPeek.bufferLimit)
        #expect(peek(head) == .tooLarge)
    }
}
