import NIOCore
import ProxyAccess
import ProxyConfig
import ProxyKit
import Testing

@testable import SOCKSProxy

/// The mixed port's decisions: the protocol of every first byte, where each goes with each
/// admission, and what silence gets.
@Suite struct MixedPortDecisionTests {
    static let refusals: [ClientAdmission.Verdict] = [
        .notAllowed(.clientNotAllowed(IPAddress("192.0.2.7")!)), .overLimit(.tooManyConnections("full")),
    ]

    @Test func everyFirstByteHasOneProtocol() {
        for byte in UInt8.min...UInt8.max {
            let expected: MixedPort.Speech = switch byte {
            case 0x05: .socks5
            case 0x04: .socks4
            case 0x16: .tls
            default: .http
            }
            #expect(MixedPort.Speech(firstByte: byte) == expected, "\(byte)")
        }
        // Every HTTP method starts with a letter: none of them is mistaken for SOCKS or TLS.
        for method in ["GET", "CONNECT", "POST", "OPTIONS", "PRI", "get"] {
            #expect(MixedPort.Speech(firstByte: method.utf8.first!) == .http)
        }
    }

    @Test func socksAndHTTPCarryTheAdmissionToTheirOwnRefusals() {
        for verdict in [ClientAdmission.Verdict.admitted] + Self.refusals {
            #expect(MixedPort.route(firstByte: 0x05, admission: verdict) == .socks(verdict))
            #expect(MixedPort.route(firstByte: 0x04, admission: verdict) == .socks(verdict))
            #expect(MixedPort.route(firstByte: UInt8(ascii: "G"), admission: verdict) == .http(verdict))
        }
    }

    @Test func aClientHelloIsRefusedUnlessAlreadyRefused() throws {
        guard case .http(.wrongProtocol(let error)) = MixedPort.route(firstByte: 0x16, admission: .admitted) else {
            Issue.record("a ClientHello on the plain port is not a wrong-protocol refusal")
            return
        }
        #expect(error.status.code == 400)
        #expect(error.message.contains("a TLS ClientHello arrived on the proxy's plain port"))
        for verdict in Self.refusals {
            #expect(MixedPort.route(firstByte: 0x16, admission: verdict) == .http(verdict), "the accept-time refusal stays the answer")
        }
    }

    @Test func silenceWaitsAsLongAsAnIdleConnectionOrAHeadAndAnswersRefusalsInHTTP() {
        let idle = TimeAmount.seconds(60), head = TimeAmount.seconds(10)
        #expect(MixedPort.waitForFirstByte(admission: .admitted, clientIdleTimeout: idle, headerTimeout: head) == idle)
        #expect(MixedPort.silence(admission: .admitted) == .close)
        for verdict in Self.refusals {
            #expect(MixedPort.waitForFirstByte(admission: verdict, clientIdleTimeout: idle, headerTimeout: head) == head)
            #expect(MixedPort.silence(admission: verdict) == .answerHTTP(verdict))
        }
    }
}
