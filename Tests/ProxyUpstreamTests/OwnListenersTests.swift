import NIOCore
import Testing

@testable import ProxyUpstream

@Suite struct OwnListenersTests {
    @Test func loopbackUnspecifiedAndMappedFormsOfAListenerPortMatch() throws {
        let own = OwnListeners()
        own.add(try SocketAddress(ipAddress: "127.0.0.1", port: 8081))
        for text in ["127.0.0.1", "127.9.9.9", "0.0.0.0", "::1", "::", "::ffff:127.0.0.1", "::ffff:0.0.0.0"] {
            #expect(own.contains(try SocketAddress(ipAddress: text, port: 8081)), "\(text)")
        }
        #expect(!own.contains(try SocketAddress(ipAddress: "127.0.0.1", port: 8082)))
        #expect(!own.contains(try SocketAddress(ipAddress: "192.0.2.1", port: 8081)))
    }

    @Test func aListenerOnASpecificAddressMatchesThatAddress() throws {
        let own = OwnListeners()
        own.add(try SocketAddress(ipAddress: "192.0.2.7", port: 3128))
        #expect(own.contains(try SocketAddress(ipAddress: "192.0.2.7", port: 3128)))
        #expect(own.contains(try SocketAddress(ipAddress: "::ffff:192.0.2.7", port: 3128)))
        #expect(!own.contains(try SocketAddress(ipAddress: "192.0.2.8", port: 3128)))
    }

    @Test func nothingMatchesBeforeAnyListenerIsBound() throws {
        #expect(!OwnListeners().contains(try SocketAddress(ipAddress: "127.0.0.1", port: 80)))
    }
}
