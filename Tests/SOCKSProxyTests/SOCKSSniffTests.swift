import NIOCore
import ProxyConfig
import ProxyKit
import Testing

@testable import SOCKSProxy

/// `socks-sniff` in the handshake machine: a CONNECT to an address is granted before any dial and
/// waits for the peek's name; a CONNECT to a name, or with sniffing off, is dialed first as
/// always; a dial that fails after the grant can only close.
@Suite struct SOCKSSniffTests {
    static let toAddress: [UInt8] = [0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x01, 10, 0, 0, 7, 0x01, 0xBB]
    static let granted5: [UInt8] = [0x05, 0x00, 0x05, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0]

    static func machine(sniff: Bool) -> SOCKSHandshake {
        SOCKSHandshake(settings: .init(requireCredentials: false, sniff: sniff))
    }

    static func request(_ destination: SOCKSDestination, version: SOCKSVersion = .v5) -> SOCKSRequest {
        SOCKSRequest(version: version, destination: destination, port: 443, user: nil)
    }

    @Test func anAddressIsGrantedFirstThenDialedByTheSniffedName() {
        var machine = Self.machine(sniff: true)
        let grant = machine.received(ByteBuffer(bytes: Self.toAddress).readableBytesView)
        #expect(grant == .init(reply: Self.granted5, step: .sniff(Self.request(.address(IPAddress("10.0.0.7")!)))))
        #expect(machine.sniffed(name: "origin.test") == .init(reply: [], step: .connect(Self.request(.name("origin.test")))))
        #expect(machine.connected(bound: (IPAddress("127.0.0.1")!, 4000)) == .init(reply: [], step: .tunnel), "granted already: no second reply")
    }

    @Test func withoutANameTheAddressIsDialedAsGiven() {
        var machine = Self.machine(sniff: true)
        _ = machine.received(ByteBuffer(bytes: Self.toAddress).readableBytesView)
        #expect(machine.sniffed(name: nil) == .init(reply: [], step: .connect(Self.request(.address(IPAddress("10.0.0.7")!)))))
    }

    @Test func aFailedDialAfterTheGrantOnlyCloses() {
        var machine = Self.machine(sniff: true)
        _ = machine.received(ByteBuffer(bytes: Self.toAddress).readableBytesView)
        _ = machine.sniffed(name: "origin.test")
        let failed = machine.connectFailed(.resolveFailed, reason: "no answer")
        #expect(failed == .init(reply: [], step: .close(reason: "no answer")))
    }

    @Test func socks4ToAnAddressIsGrantedInItsOwnReply() {
        var machine = Self.machine(sniff: true)
        let grant = machine.received(ByteBuffer(bytes: [0x04, 0x01, 0x01, 0xBB, 10, 0, 0, 7, 0x00]).readableBytesView)
        #expect(grant == .init(reply: [0x00, 0x5A, 0, 0, 0, 0, 0, 0], step: .sniff(Self.request(.address(IPAddress("10.0.0.7")!), version: .v4))))
    }

    @Test func namesAndSniffingOffAreDialedFirst() {
        let toName: [UInt8] = [0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x03, 11] + Array("origin.test".utf8) + [0x01, 0xBB]
        var named = Self.machine(sniff: true)
        #expect(named.received(ByteBuffer(bytes: toName).readableBytesView) == .init(reply: [0x05, 0x00], step: .connect(Self.request(.name("origin.test")))))
        var off = Self.machine(sniff: false)
        #expect(off.received(ByteBuffer(bytes: Self.toAddress).readableBytesView) == .init(reply: [0x05, 0x00], step: .connect(Self.request(.address(IPAddress("10.0.0.7")!)))))
        #expect(off.connected(bound: nil).reply == Self.granted5.suffix(10).map { $0 }, "granted after the dial")
    }

    /// Bytes with the request, before the grant, are refused as without sniffing: the client must
    /// wait for the reply (RFC 1928), and the peek reads only what follows it.
    @Test func bytesWithTheRequestAreStillRefused() {
        var machine = Self.machine(sniff: true)
        let output = machine.received(ByteBuffer(bytes: Self.toAddress + Array("GET / HTTP/1.1\r\n".utf8)).readableBytesView)
        #expect(output.step == .close(reason: "bytes after the request before the reply"))
        #expect(machine.sniffed(name: "origin.test").step == .close(reason: "sniffed out of turn"))
    }
}
