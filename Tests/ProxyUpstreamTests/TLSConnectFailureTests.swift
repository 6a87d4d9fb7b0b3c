import NIOCore
import NIOEmbedded
import OpenSSLTLS
import Testing

@testable import ProxyUpstream

/// The 502/504 bodies when TLS fails on the addresses of a name, and the handshake gate that tells
/// the connector how a handshake ended.
@Suite struct TLSConnectFailureTests {
    @Test func oneReasonOnEveryAddressIsSaidOnce() {
        let mismatch = TLSError.certificateInvalid(host: "api.example.com", reason: "hostname mismatch")
        let error = UpstreamConnector.describeHandshakeFailures(
            [AddressFailure(ip: "192.0.2.1", error: mismatch), AddressFailure(ip: "192.0.2.2", error: mismatch)],
            host: "api.example.com", port: 443, tried: 2
        )
        #expect(error.message == "certificate for api.example.com is not valid: hostname mismatch (tried 2 addresses)")
        #expect(error.status == .badGateway)
        #expect(error.shortDescription == "tls_certificate_invalid")
    }

    @Test func differentReasonsAreListedPerAddress() {
        let error = UpstreamConnector.describeHandshakeFailures(
            [
                AddressFailure(ip: "192.0.2.1", error: TLSError.certificateInvalid(host: "a.test", reason: "certificate has expired")),
                AddressFailure(ip: "192.0.2.2", error: TLSError.handshakeFailed(host: "a.test", reason: "alert handshake failure")),
            ],
            host: "a.test", port: 8443, tried: 2
        )
        #expect(error.message.hasPrefix("TLS with a.test port 8443 failed on every address: "))
        #expect(error.message.contains("192.0.2.1: certificate for a.test is not valid: certificate has expired"))
        #expect(error.message.contains("192.0.2.2: TLS handshake with a.test failed: alert handshake failure"))
        #expect(error.message.hasSuffix("(tried 2 addresses)"))
        #expect(error.shortDescription == "tls_handshake_failed")
        #expect(error.status == .badGateway)
    }

    @Test func handshakeTimeoutsEverywhereAre504() {
        let error = UpstreamConnector.describeHandshakeFailures(
            [AddressFailure(ip: "192.0.2.1", error: TLSError.handshakeTimeout(host: "a.test", after: .seconds(10)))],
            host: "a.test", port: 443, tried: 1
        )
        #expect(error.status == .gatewayTimeout)
        #expect(error.message.hasSuffix("(tried 1 address)"))
    }

    @Test func connectTimeoutAfterTLSFailuresNamesBoth() throws {
        let error = UpstreamConnector.describeConnectFailure(
            ChannelError.connectTimeout(.seconds(10)), host: "a.test", port: 443,
            tried: [try SocketAddress(ipAddress: "192.0.2.1", port: 443), try SocketAddress(ipAddress: "192.0.2.2", port: 443)],
            timeout: .seconds(10),
            earlierFailures: [AddressFailure(ip: "192.0.2.1", error: TLSError.certificateInvalid(host: "a.test", reason: "hostname mismatch"))]
        )
        #expect(
            error.message
                == "connecting to a.test port 443 timed out after 10000 ms (tried: 192.0.2.1, 192.0.2.2); before that 192.0.2.1: certificate for a.test is not valid: hostname mismatch"
        )
        #expect(error.status == .gatewayTimeout)
    }

    @Test func gateReportsACompletedHandshake() async throws {
        let channel = EmbeddedChannel()
        let gate = TLSHandshakeGate(serverName: "a.test")
        try channel.pipeline.syncOperations.addHandler(gate)
        let result = gate.handshakeResult(on: channel.eventLoop)
        channel.pipeline.fireUserInboundEventTriggered(
            TLSClientEvent.handshakeCompleted(negotiatedProtocol: "http/1.1", resumed: true, tlsVersion: "TLSv1.3"))
        let handshake = try await result.get()
        #expect(handshake.resumed)
        #expect(handshake.negotiatedProtocol == "http/1.1")
        #expect(handshake.version == "TLSv1.3")
        // Asked again later: the same outcome, no new promise.
        #expect(try await gate.handshakeResult(on: channel.eventLoop).get().resumed)
        _ = try? channel.finish()
    }

    @Test func gateReportsTheFirstError() async throws {
        let channel = EmbeddedChannel()
        let gate = TLSHandshakeGate(serverName: "a.test")
        try channel.pipeline.syncOperations.addHandler(gate)
        let mismatch = TLSError.certificateInvalid(host: "a.test", reason: "hostname mismatch")
        channel.pipeline.fireErrorCaught(mismatch)
        // The error went on down the pipeline too.
        #expect(throws: TLSError.self) { try channel.throwIfErrorCaught() }
        await #expect(throws: mismatch) { try await gate.handshakeResult(on: channel.eventLoop).get() }
        _ = try? channel.finish()
    }

    @Test func gateFailsAWaitingPromiseWhenTheChannelCloses() async throws {
        let channel = EmbeddedChannel()
        let gate = TLSHandshakeGate(serverName: "a.test")
        try channel.pipeline.syncOperations.addHandler(gate)
        try await channel.connect(to: SocketAddress(ipAddress: "192.0.2.1", port: 443)).get()
        #expect(gate.remoteAddress?.ipAddress == "192.0.2.1")
        let result = gate.handshakeResult(on: channel.eventLoop)
        _ = try? channel.finish()
        await #expect(throws: (any Error).self) { try await result.get() }
    }
}
