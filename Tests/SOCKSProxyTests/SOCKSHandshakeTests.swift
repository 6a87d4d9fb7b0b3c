import NIOCore
import ProxyConfig
import ProxyKit
import Testing

@testable import SOCKSProxy

/// The SOCKS handshake byte for byte: what each client message gets back, what is dialed, and
/// that bad input is refused with the version's reply and nothing dialed, whatever the split.
@Suite struct SOCKSHandshakeTests {
    typealias Machine = SOCKSHandshake
    typealias Output = SOCKSHandshake.Output

    static func machine(credentials: Bool = false) -> Machine {
        Machine(settings: .init(requireCredentials: credentials))
    }

    static func feed(_ machine: inout Machine, _ bytes: [UInt8]) -> Output {
        machine.received(ByteBuffer(bytes: bytes).readableBytesView)
    }

    /// Feeds `bytes` in pieces cut at `cuts`; every output but the last must be "need more" with
    /// at most a method reply; returns the replies concatenated and the last step.
    static func feedSplit(_ machine: inout Machine, _ bytes: [UInt8], cuts: [Int]) -> Output {
        var replies: [UInt8] = []
        var start = 0
        var last = Output(reply: [], step: .needMore)
        for end in cuts + [bytes.count] where end > start {
            last = feed(&machine, Array(bytes[start..<end]))
            replies += last.reply
            start = end
            if last.step != .needMore { break }
        }
        return Output(reply: replies, step: last.step)
    }

    static let hello: [UInt8] = [0x05, 0x01, 0x00]
    static func connect(name: String, port: UInt16 = 443) -> [UInt8] {
        [0x05, 0x01, 0x00, 0x03, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(port >> 8), UInt8(port & 0xFF)]
    }

    static func refusedNothingDialed(_ output: Output) -> Bool {
        if case .close = output.step { return true }
        return false
    }

    // MARK: - SOCKS5

    @Test func socks5NameConnectIsDialedByNameAndRepliedWithTheBoundAddress() {
        var m = Self.machine()
        #expect(Self.feed(&m, Self.hello) == Output(reply: [0x05, 0x00], step: .needMore))
        let request = SOCKSRequest(version: .v5, destination: .name("api.example.test"), port: 443, user: nil)
        #expect(Self.feed(&m, Self.connect(name: "API.Example.test.")) == Output(reply: [], step: .connect(request)))
        let done = m.connected(bound: (IPAddress("10.0.0.7")!, 40_001))
        #expect(done == Output(reply: [0x05, 0x00, 0x00, 0x01, 10, 0, 0, 7, 0x9C, 0x41], step: .tunnel))
    }

    @Test func everySplitOfGreetingAndRequestGivesTheSameResult() {
        let bytes = Self.hello + Self.connect(name: "a.test", port: 80)
        let request = SOCKSRequest(version: .v5, destination: .name("a.test"), port: 80, user: nil)
        for cut in 0...bytes.count {
            var m = Self.machine()
            let out = Self.feedSplit(&m, bytes, cuts: [cut])
            #expect(out == Output(reply: [0x05, 0x00], step: .connect(request)), "cut at \(cut)")
        }
        var m = Self.machine()
        #expect(Self.feedSplit(&m, bytes, cuts: Array(1..<bytes.count)) == Output(reply: [0x05, 0x00], step: .connect(request)))
    }

    @Test func addressesV4AndV6AreDestinationsAsSent() {
        var m = Self.machine()
        _ = Self.feed(&m, Self.hello)
        let v6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1]
        let out = Self.feed(&m, [0x05, 0x01, 0x00, 0x04] + v6 + [0x00, 0x50])
        #expect(out.step == .connect(SOCKSRequest(version: .v5, destination: .address(IPAddress("2001:db8::1")!), port: 80, user: nil)))
        var m4 = Self.machine()
        _ = Self.feed(&m4, Self.hello)
        let out4 = Self.feed(&m4, [0x05, 0x01, 0x00, 0x01, 192, 0, 2, 1, 0x01, 0xBB])
        #expect(out4.step == .connect(SOCKSRequest(version: .v5, destination: .address(IPAddress("192.0.2.1")!), port: 443, user: nil)))
        // An IP literal sent as a name is an address.
        var mn = Self.machine()
        _ = Self.feed(&mn, Self.hello)
        #expect(Self.feed(&mn, Self.connect(name: "192.0.2.9")).step
            == .connect(SOCKSRequest(version: .v5, destination: .address(IPAddress("192.0.2.9")!), port: 443, user: nil)))
    }

    @Test func usernamePasswordIsCheckedBeforeTheRequest() {
        var m = Self.machine(credentials: true)
        #expect(Self.feed(&m, [0x05, 0x02, 0x00, 0x02]) == Output(reply: [0x05, 0x02], step: .needMore))
        let auth: [UInt8] = [0x01, 0x05] + Array("alice".utf8) + [0x06] + Array("s3cret".utf8)
        // The request sent at once with the credentials waits for the verdict.
        #expect(Self.feed(&m, auth + Self.connect(name: "b.test")) == Output(reply: [], step: .verify(username: "alice", password: "s3cret")))
        let out = m.credentialsChecked(true)
        #expect(out == Output(reply: [0x01, 0x00], step: .connect(SOCKSRequest(version: .v5, destination: .name("b.test"), port: 443, user: "alice"))))
    }

    @Test func wrongCredentialsAreRefusedAndClosed() {
        var m = Self.machine(credentials: true)
        _ = Self.feed(&m, [0x05, 0x01, 0x02])
        _ = Self.feed(&m, [0x01, 0x01, 0x61, 0x01, 0x62])
        let out = m.credentialsChecked(false)
        #expect(out.reply == [0x01, 0x01])
        #expect(Self.refusedNothingDialed(out))
    }

    @Test func aClientWithoutTheRequiredMethodGetsNoAcceptableMethods() {
        var needsAuth = Self.machine(credentials: true)
        let out = Self.feed(&needsAuth, Self.hello)
        #expect(out.reply == [0x05, 0xFF] && Self.refusedNothingDialed(out))
        var open = Self.machine()
        let onlyAuth = Self.feed(&open, [0x05, 0x01, 0x02])
        #expect(onlyAuth.reply == [0x05, 0xFF] && Self.refusedNothingDialed(onlyAuth))
    }

    @Test func commandsOtherThanConnectAreNotSupported() {
        for (command, name) in [(UInt8(0x02), "BIND"), (0x03, "UDP ASSOCIATE"), (0x09, "command 9")] {
            var m = Self.machine()
            _ = Self.feed(&m, Self.hello)
            var request = Self.connect(name: "a.test")
            request[1] = command
            let out = Self.feed(&m, request)
            #expect(out == Output(reply: [0x05, 0x07, 0x00, 0x01, 0, 0, 0, 0, 0, 0], step: .close(reason: "\(name) is not supported")))
        }
    }

    // MARK: - bad input: a clear refusal, nothing dialed

    @Test func wrongVersionByteGetsNoReplyAndNothingIsDialed() {
        for first: UInt8 in [0x00, 0x03, 0x06, 0x16, 0x47, 0xFF] {
            var m = Self.machine()
            let out = Self.feed(&m, [first, 0x01, 0x00])
            #expect(out == Output(reply: [], step: .close(reason: "not SOCKS: first byte \(first)")))
        }
        var m = Self.machine()
        _ = Self.feed(&m, Self.hello)
        let out = Self.feed(&m, [0x04] + Self.connect(name: "a.test").dropFirst())
        #expect(out.reply == [0x05, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0, 0] && Self.refusedNothingDialed(out))
    }

    @Test func methodListsOfZeroAndOf255Entries() {
        var none = Self.machine()
        let out = Self.feed(&none, [0x05, 0x00])
        #expect(out == Output(reply: [0x05, 0xFF], step: .close(reason: "SOCKS5 greeting offers no method")))
        var many = Self.machine()
        let methods = [UInt8](repeating: 0x80, count: 254) + [0x00]
        #expect(Self.feed(&many, [0x05, 0xFF] + methods.prefix(100)) == Output(reply: [], step: .needMore))
        #expect(Self.feed(&many, Array(methods.dropFirst(100))) == Output(reply: [0x05, 0x00], step: .needMore))
    }

    @Test func domainLengthsOfZeroAnd255() {
        var empty = Self.machine()
        _ = Self.feed(&empty, Self.hello)
        let out = Self.feed(&empty, [0x05, 0x01, 0x00, 0x03, 0x00, 0x01, 0xBB])
        #expect(out == Output(reply: [0x05, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0, 0], step: .close(reason: "destination name empty")))
        var long = Self.machine()
        _ = Self.feed(&long, Self.hello)
        let name = (0..<4).map { _ in String(repeating: "a", count: 62) }.joined(separator: ".") + ".bbb"  // 255 bytes
        #expect(name.utf8.count == 255)
        let out255 = Self.feed(&long, Self.connect(name: name))
        #expect(out255.reply == [0x05, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0, 0] && Self.refusedNothingDialed(out255))
        for bad in ["a..b", ".", "a b", "a/b", "é.test", ".a"] {
            var m = Self.machine()
            _ = Self.feed(&m, Self.hello)
            #expect(Self.refusedNothingDialed(Self.feed(&m, Self.connect(name: bad))), "\(bad)")
        }
    }

    @Test func aTruncatedRequestWaitsAndNothingIsDialed() {
        let request = Self.connect(name: "a.test")
        for length in 0..<request.count {
            var m = Self.machine()
            _ = Self.feed(&m, Self.hello)
            #expect(Self.feed(&m, Array(request.prefix(length))) == Output(reply: [], step: .needMore), "\(length) bytes")
        }
    }

    @Test func bytesAfterTheRequestBeforeTheReplyAreRefused() {
        var same = Self.machine()
        let out = Self.feed(&same, Self.hello + Self.connect(name: "a.test") + Array("GET / HTTP/1.1\r\n".utf8))
        #expect(out.reply == [0x05, 0x00] + [0x05, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0, 0])
        #expect(out.step == .close(reason: "bytes after the request before the reply"))
        var later = Self.machine()
        _ = Self.feed(&later, Self.hello)
        guard case .connect = Self.feed(&later, Self.connect(name: "a.test")).step else { Issue.record("no connect"); return }
        let early = Self.feed(&later, [0x16, 0x03, 0x01])
        #expect(early.step == .close(reason: "bytes after the request before the reply"))
        // The dial that comes back afterwards writes nothing.
        #expect(later.connected(bound: nil).reply.isEmpty)
    }

    @Test func reservedByteAndAddressTypeAreChecked() {
        var reserved = Self.machine()
        _ = Self.feed(&reserved, Self.hello)
        var request = Self.connect(name: "a.test")
        request[2] = 0x01
        #expect(Self.feed(&reserved, request).step == .close(reason: "reserved byte 1, not 0"))
        var atyp = Self.machine()
        _ = Self.feed(&atyp, Self.hello)
        let out = Self.feed(&atyp, [0x05, 0x01, 0x00, 0x05, 0x00, 0x50])
        #expect(out == Output(reply: [0x05, 0x08, 0x00, 0x01, 0, 0, 0, 0, 0, 0], step: .close(reason: "address type 5")))
    }

    @Test func aHandshakeLongerThanTheBoundIsRefused() {
        var m = Self.machine(credentials: true)
        _ = Self.feed(&m, [0x05, 0x01, 0x02])
        // Username/password with a request that never ends: the bound, not memory, stops it.
        var out = Self.feed(&m, [0x01, 0xFF] + [UInt8](repeating: 0x61, count: 255))
        #expect(out.step == .needMore)
        out = Self.feed(&m, [UInt8](repeating: 0x62, count: Machine.maximumBuffered))
        #expect(Self.refusedNothingDialed(out))
    }

    @Test func dialFailuresMapToReplyCodes() {
        let cases: [(ProxyError.Kind, UInt8)] = [
            (.destinationDenied, 0x02), (.connectPortDenied, 0x02), (.loopDetected, 0x02), (.resolveFailed, 0x04),
            (.connectFailed, 0x05), (.connectTimeout, 0x06), (.overloaded, 0x01),
        ]
        for (kind, code) in cases {
            var m = Self.machine()
            _ = Self.feed(&m, Self.hello + Self.connect(name: "a.test"))
            let out = m.connectFailed(kind, reason: "\(kind)")
            #expect(out == Output(reply: [0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0], step: .close(reason: "\(kind)")))
        }
    }

    // MARK: - SOCKS4 and 4a

    @Test func socks4aNameAndSocks4Address() {
        var a = Self.machine()
        let out = Self.feed(&a, [0x04, 0x01, 0x00, 0x50, 0, 0, 0, 1] + Array("bob".utf8) + [0] + Array("c.test".utf8) + [0])
        #expect(out.step == .connect(SOCKSRequest(version: .v4, destination: .name("c.test"), port: 80, user: "bob")))
        #expect(a.connected(bound: (IPAddress("10.1.2.3")!, 1)) == Output(reply: [0x00, 0x5A, 0x00, 0x01, 10, 1, 2, 3], step: .tunnel))
        var four = Self.machine()
        let out4 = Self.feed(&four, [0x04, 0x01, 0x01, 0xBB, 192, 0, 2, 1, 0])
        #expect(out4.step == .connect(SOCKSRequest(version: .v4, destination: .address(IPAddress("192.0.2.1")!), port: 443, user: nil)))
        #expect(four.connectFailed(.resolveFailed, reason: "x").reply == [0x00, 0x5B, 0, 0, 0, 0, 0, 0])
    }

    @Test func socks4UserIDWithoutItsNulIsRefused() {
        var m = Self.machine()
        #expect(Self.feed(&m, [0x04, 0x01, 0x00, 0x50, 0, 0, 0, 1] + [UInt8](repeating: 0x61, count: 200)).step == .needMore)
        let out = Self.feed(&m, [UInt8](repeating: 0x61, count: 100))
        #expect(out == Output(reply: [0x00, 0x5B, 0, 0, 0, 0, 0, 0], step: .close(reason: "SOCKS4 user id without its NUL in 255 bytes")))
    }

    @Test func socks4IsRefusedWhenCredentialsAreRequired() {
        var m = Self.machine(credentials: true)
        let out = Self.feed(&m, [0x04, 0x01, 0x00, 0x50, 0, 0, 0, 1, 0] + Array("c.test".utf8) + [0])
        #expect(out == Output(reply: [0x00, 0x5B, 0, 0, 0, 0, 0, 0], step: .close(reason: "SOCKS4 cannot carry a password and --proxy-auth is on")))
    }

    @Test func socks4BindIsNotSupported() {
        var m = Self.machine()
        let out = Self.feed(&m, [0x04, 0x02, 0x00, 0x50, 192, 0, 2, 1, 0])
        #expect(out.reply == [0x00, 0x5B, 0, 0, 0, 0, 0, 0] && Self.refusedNothingDialed(out))
    }

    @Test func aTLSClientHelloOrHTTPRequestIsNotSOCKS() {
        for bytes in [[0x16, 0x03, 0x01, 0x02, 0x00] as [UInt8], Array("CONNECT a:443 HTTP/1.1\r\n".utf8)] {
            var m = Self.machine()
            let out = Self.feed(&m, bytes)
            #expect(out.reply.isEmpty && Self.refusedNothingDialed(out))
        }
    }
}
